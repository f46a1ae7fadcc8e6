// Internal: front-to-back reading of a RandomAccessFile, with large read-ahead on a remote one.
#ifndef SPELT_SRC_IO_SEQUENTIAL_READS_H_
#define SPELT_SRC_IO_SEQUENTIAL_READS_H_

#include <cstdint>
#include <future>
#include <vector>

#include "spelt/file_system.h"

namespace spelt::internal {

// How much a sequential reader of a high-latency file reads at once (one ReadMany, which a
// remote file sends as concurrent ranges of kMaxRangeBytes, spelt/range_reads.h).
inline constexpr uint64_t kReadAheadBytes = uint64_t{8} << 20;

// Reads of a file that mostly move forward (a TFRecord reader, an index scan). A high-latency
// file (RandomAccessFile::HighLatency) is read in windows of `window` bytes kept in memory, so
// that many small reads cost one round trip, and the window after the current one is read on
// another thread meanwhile (two windows of memory); waits for it go through BlockingWait
// (spelt/blocking_wait.h), since that read may need the GIL. Other files are read directly.
// Not thread-safe; `file` must outlive it. Throws what the file throws (an error of a window
// read ahead only if that window is used).
class SequentialReads {
 public:
  explicit SequentialReads(const RandomAccessFile& file, uint64_t window = kReadAheadBytes);
  ~SequentialReads();
  SequentialReads(const SequentialReads&) = delete;
  SequentialReads& operator=(const SequentialReads&) = delete;

  // Reads exactly `n` bytes at `offset` into `dst` (RandomAccessFile::ReadAt's contract).
  void Read(uint64_t offset, char* dst, uint64_t n);

 private:
  // Makes buffer_ the window at `offset` (from the window read ahead if it holds `offset`),
  // then starts reading the window after it.
  void Fill(uint64_t offset);
  // Waits for the window being read ahead (if any) and returns it; empty if `keep` is false.
  std::vector<char> TakeNext(bool keep);

  const RandomAccessFile& file_;
  uint64_t window_;  // 0: read directly
  std::vector<char> buffer_;
  uint64_t buffer_offset_ = 0;  // file offset of buffer_[0]
  std::future<std::vector<char>> next_;  // the window at next_offset_, being read
  uint64_t next_offset_ = 0, next_size_ = 0;
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_IO_SEQUENTIAL_READS_H_
