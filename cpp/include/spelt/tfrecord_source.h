// spelt/tfrecord_source.h: the records of uncompressed TFRecord files as one random-access
// data source, so that a MapDataset over them can be shuffled globally.
//
// Opening scans every file once to index its records (reading only the record headers, so
// about 12 bytes per record plus what read-ahead brings in; every length CRC is checked).
// Record keys run across the files in order, as in ArrayRecordSource. A record's payload CRC
// is checked each time it is read. Records come out as byte strings (Value::Bytes).
// Thread-safe: Get / GetMany may be called from many threads at once.
#ifndef SPELT_TFRECORD_SOURCE_H_
#define SPELT_TFRECORD_SOURCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "spelt/file_system.h"
#include "spelt/multi_file_index.h"
#include "spelt/source.h"

namespace spelt {

// Called while the index is built: bytes of all files scanned so far, and their total size.
// Called from the constructor's thread, at least once per file and every few MiB.
using TFRecordIndexProgress = std::function<void(uint64_t done, uint64_t total)>;

class TFRecordSource final : public RandomAccessSource {
 public:
  // Opens and indexes every file. Throws std::invalid_argument for an empty list or a gzip /
  // zlib file (random access needs an uncompressed file: read compressed ones with
  // TFRecordReader), std::system_error naming a file that cannot be opened, and
  // CorruptFileError (format "TFRecord") for a length CRC mismatch or a file that ends inside
  // a record, naming the file and the record's byte offset.
  // `repr` is the description stored in checkpoints. `fs` opens the paths (null: each by its
  // scheme, spelt/file_system.h).
  TFRecordSource(std::vector<std::string> paths, std::string repr,
                 const TFRecordIndexProgress& progress = {}, const FileSystemPtr& fs = nullptr);
  ~TFRecordSource() override;
  TFRecordSource(const TFRecordSource&) = delete;
  TFRecordSource& operator=(const TFRecordSource&) = delete;

  int64_t Length() const override { return index_.NumRecords(); }
  // Record `index` as bytes. Throws std::out_of_range naming the index and the length, and
  // CorruptFileError naming the file and the record's offset if its payload CRC does not
  // match.
  Value Get(int64_t index) const override;
  // Records at `indices`, appended in order; runs of consecutive keys are read with one pread.
  // On an error, *out holds the records before the first bad one and Get()'s error is thrown.
  void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const override;
  std::string Repr() const override { return repr_; }

  const std::vector<std::string>& paths() const { return paths_; }
  // (file number, byte offset of the record in that file, payload length) of record `index`.
  // Throws std::out_of_range.
  struct Location {
    size_t file;
    uint64_t offset;
    uint64_t length;
  };
  Location Locate(int64_t index) const;

 private:
  struct File;

  // Keys indices[begin, begin + count): consecutive, in one file.
  struct Run {
    size_t begin;
    int64_t count;
  };
  // The runs of `indices`: the longest runs of consecutive keys in one file, up to a few MiB.
  std::vector<Run> PlanRuns(std::span<const int64_t> indices) const;
  // The bytes of every run, read with one RandomAccessFile::ReadMany per file (for
  // high-latency files: all in flight at once).
  std::vector<std::string> FetchRuns(std::span<const int64_t> indices,
                                     const std::vector<Run>& runs) const;
  // Reads the records of keys [first, first + count) of one file, each checked, into *out;
  // from `bytes` (the run's, as FetchRuns read them) if not null.
  void ReadRun(int64_t first, int64_t count, std::vector<Value>* out,
               const std::string* bytes = nullptr) const;

  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<File>> files_;
  MultiFileIndex index_;  // key -> (file, record)
  std::string repr_;
};

}  // namespace spelt

#endif  // SPELT_TFRECORD_SOURCE_H_
