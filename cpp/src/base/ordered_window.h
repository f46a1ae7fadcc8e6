// Internal: the read-ahead primitive of the engine: a window of numbered tasks, submitted in
// order by one consumer, run ahead of it by helpers from SharedThreadPool(), and taken in
// order by the consumer, who (unless told to wait) runs a queued task itself when it would
// otherwise wait, so that it never waits for a pool thread that does not come (nested use
// never deadlocks).
//
// Tasks are void(): a task leaves its result where the consumer finds it (e.g. in slot
// i % window of the caller's buffers, reused only after task i was taken and consumed); the
// consumer bounds the window by the tasks it submits ahead. Used by the ArrayRecord reader
// (runs of chunks read and decoded on several threads), the TFRecord read-ahead reader
// (serial: the framing is sequential, so one task at a time reads the next run of records)
// and the thread-pool executor (chunks of a MapDataset; helpers allowed once its Python code
// is seen to wait).
//
// Thread-safety: the methods are called by one consumer thread at a time; tasks run on the
// consumer and on helpers. Each wait is a BlockingWait (spelt/blocking_wait.h): a helper may
// need what the consumer holds (the GIL).
#ifndef SPELT_SRC_BASE_ORDERED_WINDOW_H_
#define SPELT_SRC_BASE_ORDERED_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace spelt::internal {

class OrderedWindow {
 public:
  // What the consumer runs in Take while the task it takes is not done.
  enum class ConsumerRuns {
    kAny,     // queued tasks, oldest first; waits only when none can start
    kOldest,  // the task it takes, if no helper started it; otherwise waits
    kNone,    // nothing: waits for the helpers (REQUIRES max_helpers >= 1 while tasks wait)
  };

  struct Options {
    // Pool helpers at once (0: the consumer runs every task in Take).
    int max_helpers = 1;
    // At most one task runs at a time: task i + 1 starts after task i returned (a sequential
    // source). Otherwise tasks start in submission order and run concurrently.
    bool serial = false;
    ConsumerRuns consumer_runs = ConsumerRuns::kAny;
  };

  explicit OrderedWindow(Options options);
  // Clear(): no task runs after the destructor returned.
  ~OrderedWindow();
  OrderedWindow(const OrderedWindow&) = delete;
  OrderedWindow& operator=(const OrderedWindow&) = delete;

  // Queues `task` after those submitted before it, starts a helper if fewer than max_helpers
  // are out, and returns the task's number (0, 1, ... over the window's life). An exception
  // that `task` throws is rethrown by the Take that takes it.
  uint64_t Submit(std::function<void()> task);

  // Takes the oldest task neither taken nor dropped once it has returned, and rethrows its
  // exception if it threw; meanwhile the consumer runs tasks as consumer_runs says, and
  // otherwise waits (woken only by the task it takes, or in a serial window by any task).
  // REQUIRES: size() > 0.
  void Take();

  // Drops task `number` (one neither taken nor dropped) without waiting: a queued task never
  // runs, a running one finishes unseen (its exception is dropped). Take skips it.
  void Drop(uint64_t number);

  // Tasks submitted and neither taken nor dropped.
  size_t size() const;

  // Drops every task and waits for those running: the window is then empty (it takes new
  // tasks), and no task submitted before runs any more.
  void Clear();

  // Allows `n` helpers at once from now on and starts those that the queued tasks can use.
  void SetMaxHelpers(int n);

  struct State;

 private:
  const std::shared_ptr<State> state_;  // shared with the helpers, which may outlive this
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_BASE_ORDERED_WINDOW_H_
