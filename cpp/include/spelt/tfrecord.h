// spelt/tfrecord.h: TFRecord files (TensorFlow's record format), read and written natively.
//
// A TFRecord file is a sequence of records, each framed as
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes |
//   length bytes of payload        | uint32 masked CRC32C of the payload
// with mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (TensorFlow's
// tensorflow/core/lib/io/record_writer.cc). The whole file may be gzip- or zlib-compressed
// (TF's compression_type "GZIP" / "ZLIB"); offsets then count bytes of the decompressed stream.
//
// Every length and payload CRC is checked. A mismatch, or a file that ends inside a record,
// throws CorruptFileError (spelt/errors.h) with the format "TFRecord", naming the file and the
// byte offset of the record (in the decompressed stream for a compressed file).
#ifndef SPELT_TFRECORD_H_
#define SPELT_TFRECORD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "spelt/file_system.h"

namespace spelt {

enum class TFRecordCompression { kNone, kGzip, kZlib };

// TF's compression_type names: "" (none), "GZIP", "ZLIB" (case-sensitive, as in TF).
// Throws std::invalid_argument naming any other value.
TFRecordCompression ParseTFRecordCompression(std::string_view name);
std::string_view TFRecordCompressionName(TFRecordCompression compression);

// The compression of `path`, from its first bytes: gzip (magic 1f 8b 08) or zlib (a deflate
// header whose 16-bit check is valid), unless those bytes are a valid TFRecord length header
// (its CRC matches), and kNone otherwise (an empty file too). Throws std::system_error
// naming the path if it cannot be opened or read. `fs`: as TFRecordReader::Open's.
TFRecordCompression DetectTFRecordCompression(const std::string& path,
                                              const FileSystemPtr& fs = nullptr);

// The key of the state of an iterator over a TFRecord file (Grain's TFRecordIterDataset,
// spelt/tfrecord_dataset.h): TFRecordReader::Tell() of the next record.
inline constexpr char kReaderOffsetKey[] = "reader_offset";

// Reads the records of one file in order. Not thread-safe (one thread at a time); separate
// readers of the same file are independent.
class TFRecordReader {
 public:
  // Opens `path` with `fs` (null: the filesystem registered for its scheme,
  // spelt/file_system.h); nullopt compression detects it (DetectTFRecordCompression). Throws
  // std::system_error (or the filesystem's error) naming the path if it cannot be opened.
  // With `read_ahead`, a gzip / zlib file is decompressed and checked ahead by a helper thread
  // of the shared pool (up to ~3 MiB of records) while the caller uses the current records,
  // for reading a file in order; the contract is the same (errors surface at the bad record),
  // and destroying the reader waits for a read in progress. Uncompressed files are read
  // directly all the same: reading them ahead costs a second pass over the bytes, which
  // measured slower on 2 shared cores (docs/benchmarks.md, S2).
  static std::unique_ptr<TFRecordReader> Open(
      const std::string& path, std::optional<TFRecordCompression> compression = std::nullopt,
      bool read_ahead = false, const FileSystemPtr& fs = nullptr);
  virtual ~TFRecordReader() = default;

  // Replaces *record with the next record's payload and returns true, or returns false at the
  // end of the file (a clean end: exactly after a record). Throws CorruptFileError on a CRC
  // mismatch or a file that ends inside a record (the reader is then at that record again).
  virtual bool ReadRecord(std::string* record) = 0;

  // The same read in two steps, for callers that allocate each record's memory themselves (a
  // Python bytes object, say), so that large payloads are read from the file straight into it.
  // NextLength() reads and checks the next record's header and returns its payload length
  // (nullopt at a clean end of the file); it also rejects a length that the rest of the file
  // cannot hold (CorruptFileError), so the caller never allocates for a corrupt length.
  // ReadPayload(dst) then reads that many bytes into `dst`, checks the payload CRC and moves
  // past the record. The reader stays at the record until ReadPayload() succeeds; errors are
  // ReadRecord()'s. REQUIRES for ReadPayload: NextLength() returned a length just before.
  virtual std::optional<uint64_t> NextLength() = 0;
  virtual void ReadPayload(char* dst) = 0;
  // Whether the next NextLength() (or ReadPayload(), after NextLength()) is served from the
  // reader's buffer without reading the file: a caller may then keep a lock such as Python's
  // interpreter lock instead of releasing it for the read.
  virtual bool NextStepBuffered() const = 0;

  // The offset of the next record: bytes of the (decompressed) stream consumed so far.
  virtual uint64_t Tell() const = 0;
  // Continues reading at `offset`, which should be a value of Tell() (a record boundary);
  // a wrong offset surfaces as a CorruptFileError (length CRC mismatch) at the next read.
  // Uncompressed files seek in O(1); compressed ones decompress from the start (or from the
  // current position, when seeking forward). Throws std::invalid_argument if `offset` is past
  // the end of the stream.
  virtual void Seek(uint64_t offset) = 0;

  virtual const std::string& path() const = 0;
  virtual TFRecordCompression compression() const = 0;
};

// Writes a TFRecord file that TensorFlow, Grain and Spelt read. Not thread-safe.
class TFRecordWriter {
 public:
  // Creates or truncates `path` (with `fs`, or by its scheme when null). `level` is the zlib
  // level for GZIP / ZLIB (-1: zlib's
  // default; otherwise 0-9, std::invalid_argument outside). Throws std::system_error naming
  // the path if it cannot be created.
  static std::unique_ptr<TFRecordWriter> Open(
      const std::string& path, TFRecordCompression compression = TFRecordCompression::kNone,
      int level = -1, const FileSystemPtr& fs = nullptr);
  virtual ~TFRecordWriter() = default;

  // Appends one record. Throws std::logic_error after Close().
  virtual void Write(std::string_view record) = 0;
  // Writes what is buffered (and, compressed, ends the stream) and closes the file. Every
  // record written is readable only after Close(); idempotent.
  virtual void Close() = 0;
  virtual uint64_t NumRecords() const = 0;
};

}  // namespace spelt

#endif  // SPELT_TFRECORD_H_
