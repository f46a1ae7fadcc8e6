// spelt/blocking_wait.h: waits for work done by other threads that may need what the waiting thread holds.
//
// Engine threads that run a pipeline's Python code take the Python interpreter lock (GIL)
// themselves. A consumer that waits for such a thread while holding the GIL (a pipeline with
// Python callables above a thread prefetch runs its Next() with the GIL held) must give the
// GIL up for the wait, or both threads wait forever. The core knows nothing of Python: the
// embedder (the Python module) sets a hook that releases what it must around the wait.
// Thread-safe; SetBlockingWaitHook is meant to be called once, at start-up.
#ifndef SPELT_BLOCKING_WAIT_H_
#define SPELT_BLOCKING_WAIT_H_

#include <functional>

namespace spelt {

// Runs `wait` (a blocking wait) through the hook; runs it directly if no hook is set.
void BlockingWait(const std::function<void()>& wait);

// `hook(wait)` must run `wait` exactly once.
using BlockingWaitHook = void (*)(const std::function<void()>& wait);
void SetBlockingWaitHook(BlockingWaitHook hook);

}  // namespace spelt

#endif  // SPELT_BLOCKING_WAIT_H_
