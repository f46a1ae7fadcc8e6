#include "base/ordered_pipeline.h"

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "base/thread_pool.h"
#include "spelt/blocking_wait.h"

namespace spelt::internal {
namespace {

enum class SlotState { kFree, kPending, kRunning, kDone };

// What the caller and its helpers share. Helpers hold it by shared_ptr, so one that starts
// after the call returned finds `finished` and leaves without touching `prepare`.
struct Shared {
  explicit Shared(size_t window, const std::function<void(size_t, size_t)>& prepare)
      : state(window, SlotState::kFree), task(window), error(window), prepare(&prepare) {}

  std::mutex mu;
  std::condition_variable cv;
  std::vector<SlotState> state;  // per slot
  std::vector<size_t> task;      // per slot: the task it holds
  std::vector<std::exception_ptr> error;
  const std::function<void(size_t, size_t)>* prepare;  // used only while !finished
  int helpers = 0;  // helpers submitted that have not left
  int running = 0;  // prepare calls in progress
  bool finished = false;
};

constexpr size_t kNone = ~size_t{0};

// The slot of the pending task with the lowest index, or kNone. REQUIRES: s.mu held.
size_t LowestPending(const Shared& s) {
  size_t best = kNone;
  for (size_t slot = 0; slot < s.state.size(); ++slot) {
    if (s.state[slot] == SlotState::kPending && (best == kNone || s.task[slot] < s.task[best])) {
      best = slot;
    }
  }
  return best;
}

// Prepares the task in `slot` with s.mu released. REQUIRES: `lock` holds s.mu.
void Prepare(Shared& s, std::unique_lock<std::mutex>& lock, size_t slot) {
  s.state[slot] = SlotState::kRunning;
  ++s.running;
  lock.unlock();
  std::exception_ptr error;
  try {
    (*s.prepare)(slot, s.task[slot]);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  s.error[slot] = error;
  s.state[slot] = SlotState::kDone;
  --s.running;
  s.cv.notify_all();
}

void Help(const std::shared_ptr<Shared>& s) {
  std::unique_lock<std::mutex> lock(s->mu);
  for (size_t slot; !s->finished && (slot = LowestPending(*s)) != kNone;) Prepare(*s, lock, slot);
  --s->helpers;
}

// Stops the helpers and waits for the prepare calls in progress. REQUIRES: `lock` holds s.mu.
void Finish(Shared& s, std::unique_lock<std::mutex>& lock) {
  s.finished = true;
  BlockingWait([&] { s.cv.wait(lock, [&] { return s.running == 0; }); });
}

}  // namespace

void RunOrderedPipeline(size_t n, int num_threads, size_t window,
                        const std::function<void(size_t slot, size_t i)>& prepare,
                        const std::function<void(size_t slot, size_t i)>& consume) {
  if (num_threads <= 1 || window <= 1) {
    for (size_t i = 0; i < n; ++i) {
      prepare(i % window, i);
      consume(i % window, i);
    }
    return;
  }
  const auto s = std::make_shared<Shared>(window, prepare);
  std::unique_lock<std::mutex> lock(s->mu);
  size_t next = 0;  // the next task to hand out
  for (size_t i = 0; i < n; ++i) {
    for (; next < n && next < i + window; ++next) {  // its slot's last task was consumed
      s->state[next % window] = SlotState::kPending;
      s->task[next % window] = next;
      if (s->helpers < num_threads - 1) {
        ++s->helpers;
        SharedThreadPool().Submit([s] { Help(s); });
      }
    }
    const size_t slot = i % window;
    while (s->state[slot] != SlotState::kDone) {
      if (const size_t pending = LowestPending(*s); pending != kNone) {
        Prepare(*s, lock, pending);
      } else {
        BlockingWait([&] { s->cv.wait(lock); });  // a helper may need the caller's GIL
      }
    }
    if (std::exception_ptr error = s->error[slot]) {
      Finish(*s, lock);
      std::rethrow_exception(error);
    }
    lock.unlock();
    try {
      consume(slot, i);
    } catch (...) {
      lock.lock();
      Finish(*s, lock);
      throw;
    }
    lock.lock();
    s->state[slot] = SlotState::kFree;
  }
  Finish(*s, lock);
}

}  // namespace spelt::internal
