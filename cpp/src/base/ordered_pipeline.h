// Internal: a bounded read-ahead of numbered tasks, consumed in order. Task i is prepared on
// any of up to `num_threads` threads (the caller and helpers from the shared pool), at most
// `window` tasks ahead of the consumer, and consumed on the calling thread in order 0, 1, ...
// Used by sequential readers to check and decode the next runs of a file while the caller
// visits the current one.
#ifndef SPELT_SRC_BASE_ORDERED_PIPELINE_H_
#define SPELT_SRC_BASE_ORDERED_PIPELINE_H_

#include <cstddef>
#include <functional>

namespace spelt::internal {

// Calls prepare(slot, i) for every i in [0, n), and then consume(slot, i) for each i in order
// on the calling thread; slot = i % window names per-slot state that the two share and that
// is reused for task i + window only after consume(slot, i) returned. With num_threads <= 1
// or window == 1 everything runs on the calling thread (prepare(i) then consume(i)).
//
// Helpers come from SharedThreadPool(); the caller prepares pending tasks itself while it
// waits, so the call finishes even if no helper ever starts (nested use never deadlocks).
// Errors: if prepare(i) throws, consume(0..i-1) still run and the error is rethrown in place
// of consume(i); an error of consume(i) is rethrown at once. Either way the call returns only
// after no helper runs prepare any more. REQUIRES: window >= 1.
void RunOrderedPipeline(size_t n, int num_threads, size_t window,
                        const std::function<void(size_t slot, size_t i)>& prepare,
                        const std::function<void(size_t slot, size_t i)>& consume);

}  // namespace spelt::internal

#endif  // SPELT_SRC_BASE_ORDERED_PIPELINE_H_
