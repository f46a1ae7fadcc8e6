// spelt/array_record.h: native reader and writer for ArrayRecord files, the format of Google's
// `array_record` package, with no TensorFlow, abseil or protobuf dependency.
//
// An ArrayRecord file is a Riegeli records file whose records are stored in chunks of
// `group_size` consecutive records, followed by a footer chunk that lists every chunk's offset
// and a postscript (in the last 64 KiB block) that locates the footer. Record i lives in chunk
// i / group_size, so a random read costs one pread and one chunk decode. Files written here are
// read by the `array_record` package and vice versa. Byte layout:
// shared/reference/arrayrecord-format.md.
//
// Thread-safety: an ArrayRecordReader may be used from many threads at once (all its methods
// are const). An ArrayRecordWriter must be used by one thread at a time.
//
// Errors are exceptions:
//   - CorruptFileError: the file is not a valid ArrayRecord file (empty, truncated, not an
//     ArrayRecord file, a hash mismatch, inconsistent sizes or offsets). what() names the file and
//     the byte offset of the offending structure.
//   - UnsupportedError: a valid file uses a feature this implementation lacks (transposed chunks,
//     written with the `transpose` option).
//   - std::out_of_range: a record index >= NumRecords(); what() names the file and the index.
//   - std::system_error: the operating system failed to open, read or write the file.
//   - std::invalid_argument: bad writer options.
// With the default options the reader never returns bytes that differ from what was written:
// every header and all stored data are checked against their HighwayHash before use.
#ifndef SPELT_ARRAY_RECORD_H_
#define SPELT_ARRAY_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "spelt/errors.h"
#include "spelt/file_system.h"

namespace spelt {

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

struct ArrayRecordReaderOptions {
  // Check each chunk's data hash before decoding it. Off saves one pass over the stored
  // (compressed) bytes; corrupt uncompressed data then goes unnoticed.
  bool verify_data_hash = true;
  // Check block-header and chunk-header hashes. Meant to stay on: turning it off is for fuzzing
  // and forensics. The reader stays memory-safe either way, but may then report a corrupt
  // header as some other inconsistency, or return wrong bytes.
  bool verify_header_hashes = true;
  // Decoded chunks kept in a least-recently-used cache, so that reads of neighbouring records
  // decode their chunk once. 0 disables the cache. Each entry holds one decoded chunk
  // (group_size records), so keep this small for large groups.
  size_t cache_chunks = 4;
};

// Facts about one file, for tools such as `inspect`.
struct ArrayRecordInfo {
  std::string path;
  uint64_t file_size = 0;
  uint64_t num_records = 0;
  uint64_t num_chunks = 0;         // data chunks (the footer and postscript not counted)
  uint64_t group_size = 0;         // as ArrayRecordReader::GroupSize()
  std::string compression;         // of the first data chunk: "uncompressed", "zstd", "brotli",
                                   // "snappy"; empty if the file has no records
  std::string writer_options;      // as the writer stored it, e.g. "group_size:1,...,zstd:3,..."
  uint64_t decoded_bytes = 0;      // sum of all record sizes
  uint64_t footer_offset = 0;      // byte offset of the footer chunk
};

// Random access to the records of one ArrayRecord file. Open() reads and checks the postscript
// and footer; records are read on demand from its RandomAccessFile (spelt/file_system.h).
class ArrayRecordReader {
 public:
  // Opens `path` (a path or URI, with `fs`, or the filesystem registered for its scheme when
  // `fs` is null) and reads its index. Throws std::system_error (or the filesystem's error)
  // if the file cannot be opened, CorruptFileError if it is not a valid ArrayRecord file.
  static std::unique_ptr<ArrayRecordReader> Open(const std::string& path,
                                                 ArrayRecordReaderOptions options = {},
                                                 const FileSystemPtr& fs = nullptr);

  virtual ~ArrayRecordReader() = default;
  ArrayRecordReader(const ArrayRecordReader&) = delete;
  ArrayRecordReader& operator=(const ArrayRecordReader&) = delete;

  virtual const std::string& path() const = 0;
  virtual uint64_t NumRecords() const = 0;
  virtual uint64_t NumChunks() const = 0;
  // Records per chunk: the record count of the first chunk, as array_record reads it (so a
  // one-chunk file reports its record count, not the writer's group_size); 0 if no records.
  virtual uint64_t GroupSize() const = 0;

  // A copy of record `index`. REQUIRES: index < NumRecords(), else std::out_of_range.
  // Decodes the record's chunk unless the cache holds it. Throws CorruptFileError or
  // UnsupportedError if that chunk is bad.
  virtual std::string ReadRecord(uint64_t index) const = 0;

  // Copies of the records at `indices` (in that order; repeats allowed). Indices are grouped by
  // chunk, each chunk is decoded once, and neighbouring chunks are read with one pread. Up to
  // `num_threads` threads work on it: the caller and helpers from a pool that all readers share
  // (std::thread::hardware_concurrency() threads, started on first use); <= 1 reads in the
  // calling thread only. Every index is checked before anything is read (std::out_of_range).
  // If chunks are bad, throws the error of one of them.
  virtual std::vector<std::string> ReadRecords(std::span<const uint64_t> indices,
                                               int num_threads = 1) const = 0;

  // Calls visit(index, record) for each record of [begin, end), in order, from the calling
  // thread: the sequential read. `record` views the reader's buffer and is valid only during
  // the call. Neighbouring chunks are read with one pread (runs of up to 1 MiB) into buffers
  // kept per thread and decoded there, with every hash checked as ReadRecords checks them:
  // nothing is allocated per record. With num_threads > 1, up to num_threads - 1 helpers from
  // the pool that ReadRecords uses read, check and decode the next runs (at most 2 *
  // num_threads runs ahead) while `visit` runs on the calling thread; the caller reads runs
  // too when it would otherwise wait. REQUIRES: begin <= end <= NumRecords(), else
  // std::out_of_range. Throws as ReadRecords for a bad chunk (the records before it have been
  // visited), and whatever `visit` throws; no helper touches the call's buffers after it
  // returned or threw.
  virtual void ForEachRecord(
      uint64_t begin, uint64_t end,
      const std::function<void(uint64_t index, std::string_view record)>& visit,
      int num_threads = 1) const = 0;

  // Facts about the file. Reads the first data chunk to learn its compression, so throws as
  // ReadRecord(0) would if that chunk is bad.
  virtual ArrayRecordInfo Info() const = 0;

 protected:
  ArrayRecordReader() = default;
};

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

enum class ArrayRecordCompression { kUncompressed, kZstd, kBrotli, kSnappy };

struct ArrayRecordWriterOptions {
  // Records per chunk. 1 (the default of array_record since 0.8.4) makes every random read
  // decode one record; larger groups compress better and read faster sequentially, but a
  // random read decodes a whole group. Range [1, 2^31 - 1].
  uint64_t group_size = 1;
  ArrayRecordCompression compression = ArrayRecordCompression::kZstd;
  // zstd: [-131072, 22], default 3; brotli: [0, 11], default 6. Unset for uncompressed/snappy.
  std::optional<int> compression_level;
  // zstd: [10, 31], default 20 (array_record's choice); brotli: [10, 30], default 22.
  // Unset for uncompressed/snappy.
  std::optional<int> window_log;
  // Follow each data chunk with a padding chunk up to the next 64 KiB boundary.
  bool pad_to_block_boundary = false;

  // Parses array_record's option syntax, a comma-separated list of: group_size:N,
  // uncompressed, zstd[:L], brotli[:L], snappy, window_log:N, pad_to_block_boundary[:true|false]
  // (bare = false, as array_record >= 0.8.4), default, transpose_bucket_size:N (ignored),
  // transpose:false, max_parallelism:N|auto (accepted and ignored: encoding is serial).
  // Each option at most once (one compression). An empty string gives the defaults.
  // Throws std::invalid_argument naming the bad option
  // (also for `transpose`/`transpose:true`, which is not supported).
  static ArrayRecordWriterOptions FromString(std::string_view text);
  // array_record's description of these options, stored in the footer, e.g.
  // "group_size:1,transpose:false,pad_to_block_boundary:false,zstd:3,window_log:20,
  // max_parallelism:1" (one line).
  std::string ToString() const;
  // Throws std::invalid_argument if a value is out of range or set for the wrong compression.
  void Validate() const;
};

// Writes a new ArrayRecord file. Records are buffered until a group is complete, then encoded
// and appended; Close() writes the last group, the footer and the postscript. A file that was
// not closed successfully is not a valid ArrayRecord file (readers reject it).
class ArrayRecordWriter {
 public:
  // Creates (or truncates) `path` (with `fs`, or by its scheme when null) and writes the file
  // signature. Throws std::invalid_argument for bad options, std::system_error (or the
  // filesystem's error) if the file cannot be created.
  static std::unique_ptr<ArrayRecordWriter> Open(const std::string& path,
                                                 ArrayRecordWriterOptions options = {},
                                                 const FileSystemPtr& fs = nullptr);

  // Abandons the file (leaving it invalid) if Close() was not called.
  virtual ~ArrayRecordWriter() = default;
  ArrayRecordWriter(const ArrayRecordWriter&) = delete;
  ArrayRecordWriter& operator=(const ArrayRecordWriter&) = delete;

  // Appends one record (copied). REQUIRES: not closed (std::logic_error). After an I/O error
  // (std::system_error) the writer is failed: further calls throw std::logic_error.
  virtual void Write(std::string_view record) = 0;
  // Records written so far.
  virtual uint64_t NumRecords() const = 0;
  // Writes the pending group, the footer and the postscript, and closes the file.
  // REQUIRES: not closed and not failed (std::logic_error).
  virtual void Close() = 0;

 protected:
  ArrayRecordWriter() = default;
};

}  // namespace spelt

#endif  // SPELT_ARRAY_RECORD_H_
