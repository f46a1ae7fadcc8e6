// spelt/array_record_source.h: records of one or more ArrayRecord files as one data source.
//
// Record keys run across the files in order: with files of n0, n1, ... records, key k < n0 is
// record k of the first file, key n0 + j is record j of the second, and so on (the numbering of
// array_record's ArrayRecordDataSource). Records come out as byte strings (Value::Bytes).
// Thread-safe: Get / GetMany may be called from many threads at once.
#ifndef SPELT_ARRAY_RECORD_SOURCE_H_
#define SPELT_ARRAY_RECORD_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "spelt/array_record.h"
#include "spelt/multi_file_index.h"
#include "spelt/source.h"

namespace spelt {

class ArrayRecordSource final : public RandomAccessSource {
 public:
  // Opens every file (reading its index only). Throws std::invalid_argument for an empty
  // list, and what ArrayRecordReader::Open throws for a missing or corrupt file.
  // `repr` is the description stored in checkpoints (the Python face passes Grain's). `fs`
  // opens the paths (null: each by its scheme, spelt/file_system.h).
  ArrayRecordSource(std::vector<std::string> paths, ArrayRecordReaderOptions options,
                    std::string repr, const FileSystemPtr& fs = nullptr);
  ArrayRecordSource(const ArrayRecordSource&) = delete;
  ArrayRecordSource& operator=(const ArrayRecordSource&) = delete;

  int64_t Length() const override { return index_.NumRecords(); }
  // Record `index` as bytes. Throws std::out_of_range naming the index and the length, and
  // for a bad chunk the reader's CorruptFileError / UnsupportedError (naming the file and
  // byte offset) with the record key and Repr() added to its detail.
  Value Get(int64_t index) const override;
  // Records at `indices`, appended to *out in order, read by ReadMany() on the reading
  // iterator's share of its threads (ReadThreads(), spelt/read_threads.h). If that fails, the records are read again one
  // at a time, so that the error is Get()'s for the first bad record and *out holds the
  // records before it (the contract of RandomAccessSource::GetMany).
  void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const override;
  // Records at `indices`, in order; each file's share is read by its reader in parallel on up
  // to `num_threads` threads, decoding each chunk once. Throws as ArrayRecordReader::
  // ReadRecords does (the error of one bad chunk, not necessarily the first).
  std::vector<std::string> ReadMany(std::span<const int64_t> indices, int num_threads) const;
  std::string Repr() const override { return repr_; }

  const std::vector<std::string>& paths() const { return paths_; }

 private:
  // " (reading record key <index> of <repr>)": added to the detail of a bad-chunk error.
  std::string NamingRecord(int64_t index) const;

  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<ArrayRecordReader>> readers_;
  MultiFileIndex index_;  // key -> (reader, record)
  std::string repr_;
};

}  // namespace spelt

#endif  // SPELT_ARRAY_RECORD_SOURCE_H_
