// spelt/multi_file_index.h: the records of several files as one key space, as the file
// sources number them (ArrayRecordSource, TFRecordSource; Grain's ArrayRecordDataSource):
// the files' records one after the other in the order the files were added, so key k is
// record k - Start(f) of the file f with Start(f) <= k < End(f).
//
// Thread-safety: const methods may be called from any thread; AddFile is not thread-safe
// (sources add their files while they are built).
#ifndef SPELT_MULTI_FILE_INDEX_H_
#define SPELT_MULTI_FILE_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace spelt {

class MultiFileIndex {
 public:
  // A key's file and the record's number in that file.
  struct Position {
    size_t file;
    int64_t record;
  };

  // Appends a file of `num_records` records (REQUIRES >= 0) after those added before.
  void AddFile(int64_t num_records);

  int64_t NumRecords() const { return total_; }
  size_t NumFiles() const { return starts_.size(); }
  // The first key of `file`, and one past its last (REQUIRES: file < NumFiles()).
  int64_t Start(size_t file) const { return starts_[file]; }
  int64_t End(size_t file) const;

  // The position of `key`. Throws std::out_of_range "<source>: record key <key> out of range
  // [0, <NumRecords()>)", followed by " of <name>" if `name` is not empty, if key is outside
  // [0, NumRecords()). O(log NumFiles()).
  Position Locate(int64_t key, std::string_view source, std::string_view name = {}) const;

 private:
  std::vector<int64_t> starts_;  // starts_[f] = first key of file f
  int64_t total_ = 0;
};

}  // namespace spelt

#endif  // SPELT_MULTI_FILE_INDEX_H_
