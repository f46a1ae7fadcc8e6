// spelt/parallel_work.h: a per-thread clock of heavy native work that gains from running on
// several threads (an image decode, not a Python call). Operations whose per-element work is
// that heavy mark it with a ScopedParallelWork; the thread-pool executor (spelt/executor.h)
// uses the clock to give read threads to a pipeline that also calls Python (DatasetNode::
// CallsPython), which it otherwise computes on the consumer alone: where most of a chunk's time is
// such work, threads overlap it while the Python parts take turns.
// Thread-safety: the clock is per thread; a scope affects only the thread that makes it.
#ifndef SPELT_PARALLEL_WORK_H_
#define SPELT_PARALLEL_WORK_H_

#include <cstdint>

namespace spelt {

// Nanoseconds the calling thread has spent inside outermost ScopedParallelWork scopes so far
// (steady clock; a scope still open is not counted yet).
int64_t ParallelWorkNs();

// Counts its lifetime into ParallelWorkNs() unless nested in another scope on this thread.
class ScopedParallelWork {
 public:
  ScopedParallelWork();
  ~ScopedParallelWork();
  ScopedParallelWork(const ScopedParallelWork&) = delete;
  ScopedParallelWork& operator=(const ScopedParallelWork&) = delete;

 private:
  int64_t start_ns_ = -1;  // -1: nested
};

}  // namespace spelt

#endif  // SPELT_PARALLEL_WORK_H_
