// Internal: front-to-back reading of a RandomAccessFile, with deep read-ahead on a remote one.
#ifndef SPELT_SRC_IO_SEQUENTIAL_READS_H_
#define SPELT_SRC_IO_SEQUENTIAL_READS_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "base/buffer_pool.h"
#include "base/ordered_window.h"
#include "base/thread_pool.h"
#include "spelt/file_system.h"

namespace spelt::internal {

// How much a sequential reader of a high-latency file reads at once (one ReadMany, which a
// remote file sends as concurrent ranges of kMaxRangeBytes, spelt/range_reads.h).
inline constexpr uint64_t kReadAheadBytes = uint64_t{8} << 20;

// Reads of a file that mostly move forward (a TFRecord reader, an index scan). A high-latency
// file (RandomAccessFile::HighLatency) is read in windows of `window` bytes kept in memory, so
// that many small reads cost one round trip, and the windows after the current one are read
// meanwhile: as many as cover file.ReadAheadBytes() (at least one), each its own ReadMany, all
// in flight at once, so that a slow store's round trips overlap. The windows are the tasks of
// an OrderedWindow (base/ordered_window.h) on SharedThreadPool(), which has a thread more per
// window while the reader lives (ThreadPool::BlockingThreads: the reads wait on the network);
// the reader runs a window's read itself if no thread has started it. Memory: the current
// window plus those ahead, in buffers of base/buffer_pool.h (a dropped window's goes back to
// the pool and serves a later one). Waits for a window go through BlockingWait
// (spelt/blocking_wait.h: the GIL is given up). A read outside the current window and those
// ahead (a jump) drops them and starts again there; a read in a later window ahead drops only
// those before it (a dropped window being read finishes unseen). Other files are read
// directly. Not thread-safe; `file` must outlive it. Throws what the file throws (an error of
// a window read ahead only if that window is used).
class SequentialReads {
 public:
  explicit SequentialReads(const RandomAccessFile& file, uint64_t window = kReadAheadBytes);
  SequentialReads(const SequentialReads&) = delete;
  SequentialReads& operator=(const SequentialReads&) = delete;

  // Reads exactly `n` bytes at `offset` into `dst` (RandomAccessFile::ReadAt's contract).
  void Read(uint64_t offset, char* dst, uint64_t n);

 private:
  struct Window {
    uint64_t offset = 0;
    uint64_t task = 0;  // its number in reads_
    std::shared_ptr<Buffer> bytes;  // filled by the task (which holds it too while it runs)
  };

  // Makes buffer_ the window at `offset` (the one ahead that holds it, if any), then keeps
  // depth_ windows after it in flight.
  void Fill(uint64_t offset);
  // Starts reading windows after the last one in flight (or from `offset` if none is) until
  // `count` are in flight or the file ends.
  void ReadAhead(uint64_t offset, size_t count);

  const RandomAccessFile& file_;
  uint64_t window_;  // 0: read directly
  size_t depth_;  // windows read ahead of the current one
  Buffer buffer_;
  uint64_t buffer_offset_ = 0;  // file offset of buffer_.data()[0]
  std::deque<Window> ahead_;  // consecutive windows from the end of buffer_ (or a jump's target)
  std::optional<ThreadPool::BlockingThreads> threads_;  // for a high-latency file
  OrderedWindow reads_;  // the windows of ahead_, in order; declared last: waits for reads first
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_IO_SEQUENTIAL_READS_H_
