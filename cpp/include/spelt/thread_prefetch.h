// spelt/thread_prefetch.h: Grain's ThreadPrefetchDatasetIterator over any iterator (for
// iterators that are not an IterDataset's; IterDataset::ThreadPrefetch is the dataset form).
#ifndef SPELT_THREAD_PREFETCH_H_
#define SPELT_THREAD_PREFETCH_H_

#include <cstdint>
#include <memory>

#include "spelt/node.h"

namespace spelt {

// From the first Next() or StartPrefetch() on, a thread of the returned iterator reads up to
// `buffer_size` elements of `parent` ahead (0: none). GetState() is the parent's state after
// the last element returned; SetState() drops the read-ahead and restores the parent. Errors
// of the parent are raised in order. `parent` is used by one thread at a time. Waits go
// through BlockingWait (spelt/blocking_wait.h). Throws std::invalid_argument if
// buffer_size < 0.
std::unique_ptr<DatasetIterator> MakeThreadPrefetchIterator(
    std::unique_ptr<DatasetIterator> parent, int64_t buffer_size);

// Stops the threads of every thread prefetch (and interleave) of the process once their
// current element is read, keeping what they read; from then on such iterators read in the
// calling thread and start no thread. For embedders shutting down: the Python module calls it
// at exit, before the interpreter ends threads that would take the GIL. Thread-safe; waits
// through BlockingWait.
void StopThreadPrefetching();

}  // namespace spelt

#endif  // SPELT_THREAD_PREFETCH_H_
