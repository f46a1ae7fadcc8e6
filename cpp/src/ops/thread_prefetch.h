// Internal: ThreadPrefetchIterDataset (ops/thread_prefetch.cc); InterleaveIterDataset reads
// each of its iterators through one.
#ifndef SPELT_SRC_OPS_THREAD_PREFETCH_H_
#define SPELT_SRC_OPS_THREAD_PREFETCH_H_

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/nodes.h"

namespace spelt::internal {

// Grain 0.2.18's ThreadPrefetchDatasetIterator (grain/_src/python/dataset/transformations/
// prefetch.py): from the first Next() or StartPrefetch() on, a thread of this iterator calls
// `parent`'s Next() and GetState() and keeps up to `buffer_size` (element, state) pairs ready;
// with buffer_size 0 there is no thread and Next() calls the parent, and none either where the
// parent takes on `buffer_size` more elements of its own read-ahead
// (DatasetIterator::AbsorbReadAhead; asked where the thread would start, at the first Next()
// or StartPrefetch() and after a restore, until the parent takes them). The parent is only
// ever used by one thread at a time (the producer while it runs, else the caller).
// State: the parent's state after the last element returned (read-ahead never counts; at
// the end of the stream, still the state after the last element). SetState() stops the
// thread, drops the read-ahead, restores the parent; the thread starts again at the next
// Next(). An error of the parent is raised by the Next() that reaches it, after every element
// before it; the next Next() asks the parent again, and the state is then the parent's after
// the error (past the failing element where the parent steps past it), so that a checkpoint
// taken there restores to what this iterator yields next. The next index is the parent's, read
// from this iterator's state (NextIndexOf never touches the parent's position, so the
// producer thread may run meanwhile). Waits go through BlockingWait
// (spelt/blocking_wait.h). Used by one thread at a time, like every DatasetIterator.
class ThreadPrefetchIterator final : public DatasetIterator {
 public:
  // REQUIRES: buffer_size >= 0.
  ThreadPrefetchIterator(std::unique_ptr<DatasetIterator> parent, int64_t buffer_size);
  ~ThreadPrefetchIterator() override;
  std::optional<Value> Next() override;
  State GetState() const override { return state_; }
  void SetState(const State& state) override;
  void StartPrefetch() override;
  int64_t NextIndexOf(const State& state) const override { return parent_->NextIndexOf(state); }
  State StateAtIndex(int64_t index, const State& state) const override {
    return parent_->StateAtIndex(index, state);
  }
  // Blocks until the producer thread, if any, has stopped; for StopThreadPrefetching().
  void WaitForProducerToStop();

 private:
  // One result of the parent: an element and the state after it, or the end (no value, no
  // error), or an error.
  struct Entry {
    std::optional<Value> value;
    State state;  // the parent's after `value`, or after `error` (null if unknown)
    std::exception_ptr error;
  };
  // The parent's state after its Next() raised: where the next Next() continues (past a
  // failing element, or at it where the parent keeps its position). Null if unknown.
  State StateAfterError() const;
  void Produce();
  // The parent's next element, read in the calling thread.
  std::optional<Value> ReadParent();
  // Stops and joins the producer thread and drops the buffer.
  void Stop();

  std::unique_ptr<DatasetIterator> parent_;
  const size_t buffer_size_;
  State state_;
  std::thread producer_;
  std::mutex mu_;
  std::condition_variable cv_;  // buffer_ or stop_ changed
  std::deque<Entry> buffer_;    // guarded by mu_
  bool stop_ = false;           // guarded by mu_
  bool running_ = false;        // the producer thread is in Produce(); guarded by mu_
  bool absorbed_ = false;       // the parent reads the buffer ahead itself: no thread
};

// True once StopThreadPrefetching() was called: no new threads are started.
bool ThreadPrefetchingStopped();

// Throws std::invalid_argument (Grain's message) if buffer_size < 0.
void CheckBufferSize(int64_t buffer_size);

// IterDataset::ThreadPrefetch's node. Throws as CheckBufferSize.
IterNodePtr MakeThreadPrefetchNode(IterNodePtr parent, int64_t buffer_size);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_THREAD_PREFETCH_H_
