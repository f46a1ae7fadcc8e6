// OrderedWindow (base/ordered_window.h): a queue of numbered tasks under one mutex; tasks
// start oldest first, on a helper or on the consumer, and are taken oldest first.
#include "base/ordered_window.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "spelt/blocking_wait.h"

namespace spelt::internal {

struct OrderedWindow::State {
  explicit State(Options options)
      : max_helpers(options.max_helpers),
        serial(options.serial),
        consumer_runs(options.consumer_runs) {}

  struct Entry {
    uint64_t number = 0;
    std::function<void()> task;  // empty once started
    bool started = false;
    bool done = false;
    std::exception_ptr error;
  };

  std::mutex mu;
  // Signalled when a task returns that the consumer may be waiting for: the one it takes
  // (awaited), any task of a serial window (the next one may start) or the last one running
  // while the consumer clears the window.
  std::condition_variable cv;
  const Entry* awaited = nullptr;
  bool clearing = false;
  // The tasks neither taken nor dropped, oldest first: entries[0, first_queued) have started
  // (tasks start in order), the rest are queued. A running task holds its entry, so a task
  // dropped while it runs finishes unseen.
  std::deque<std::shared_ptr<Entry>> entries;
  size_t first_queued = 0;
  uint64_t next_number = 0;
  int max_helpers;
  const bool serial;
  const ConsumerRuns consumer_runs;
  int helpers = 0;  // submitted to the pool and not left
  int running = 0;  // tasks running, dropped ones included
};

namespace {

using State = OrderedWindow::State;

bool CanStart(const State& s) {
  return s.first_queued < s.entries.size() && (!s.serial || s.running == 0);
}

// Runs the oldest queued task with s.mu released. REQUIRES: `lock` holds s.mu, CanStart(s).
void RunOne(State& s, std::unique_lock<std::mutex>& lock) {
  const std::shared_ptr<State::Entry> entry = s.entries[s.first_queued++];
  std::function<void()> task = std::move(entry->task);
  entry->task = nullptr;
  entry->started = true;
  ++s.running;
  lock.unlock();
  std::exception_ptr error;
  try {
    task();
  } catch (...) {
    error = std::current_exception();
  }
  task = nullptr;  // what it holds is freed without the lock (it may take the GIL)
  lock.lock();
  entry->error = std::move(error);
  entry->done = true;
  --s.running;
  if (entry.get() == s.awaited || s.serial || (s.clearing && s.running == 0)) s.cv.notify_all();
}

void Help(const std::shared_ptr<State>& s) {
  std::unique_lock<std::mutex> lock(s->mu);
  while (CanStart(*s)) RunOne(*s, lock);
  --s->helpers;
}

// Starts the helpers that the queued tasks can use. REQUIRES: s->mu held.
void StartHelpers(const std::shared_ptr<State>& s) {
  const size_t queued = s->entries.size() - s->first_queued;
  const size_t usable = s->serial ? std::min<size_t>(queued, 1) : queued;
  for (size_t n = 0; n < usable && s->helpers < s->max_helpers; ++n) {
    ++s->helpers;
    SharedThreadPool().Submit([s] { Help(s); });
  }
}

}  // namespace

OrderedWindow::OrderedWindow(Options options) : state_(std::make_shared<State>(options)) {}

OrderedWindow::~OrderedWindow() { Clear(); }

uint64_t OrderedWindow::Submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto entry = std::make_shared<State::Entry>();
  entry->number = state_->next_number++;
  entry->task = std::move(task);
  state_->entries.push_back(std::move(entry));
  StartHelpers(state_);
  return state_->next_number - 1;
}

void OrderedWindow::Take() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  const std::shared_ptr<State::Entry> taken = s.entries.front();
  // Whether the consumer runs a task now (the oldest queued one).
  const auto runs_one = [&] {
    return CanStart(s) && (s.consumer_runs == ConsumerRuns::kAny ||
                           (s.consumer_runs == ConsumerRuns::kOldest && !taken->started));
  };
  while (!taken->done) {
    if (runs_one()) {
      RunOne(s, lock);
      StartHelpers(state_);  // a serial window's helper may have left while this one ran
    } else {
      s.awaited = taken.get();
      BlockingWait([&] { s.cv.wait(lock, [&] { return taken->done || runs_one(); }); });
      s.awaited = nullptr;
    }
  }
  s.entries.pop_front();
  --s.first_queued;
  const std::exception_ptr error = std::move(taken->error);
  lock.unlock();
  if (error) std::rethrow_exception(error);
}

void OrderedWindow::Drop(uint64_t number) {
  State& s = *state_;
  std::function<void()> dropped;  // freed after the lock is released
  std::lock_guard<std::mutex> lock(s.mu);
  const auto it = std::find_if(s.entries.begin(), s.entries.end(),
                               [number](const auto& entry) { return entry->number == number; });
  if (it == s.entries.end()) return;
  if (static_cast<size_t>(it - s.entries.begin()) < s.first_queued) {
    --s.first_queued;
  } else {
    dropped = std::move((*it)->task);
  }
  s.entries.erase(it);
}

size_t OrderedWindow::size() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->entries.size();
}

void OrderedWindow::Clear() {
  State& s = *state_;
  std::vector<std::function<void()>> dropped;  // freed after the lock is released
  std::unique_lock<std::mutex> lock(s.mu);
  for (size_t i = s.first_queued; i < s.entries.size(); ++i) {
    dropped.push_back(std::move(s.entries[i]->task));
  }
  s.entries.clear();
  s.first_queued = 0;
  s.clearing = true;
  BlockingWait([&] { s.cv.wait(lock, [&] { return s.running == 0; }); });
  s.clearing = false;
}

void OrderedWindow::SetMaxHelpers(int n) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->max_helpers = n;
  StartHelpers(state_);
}

}  // namespace spelt::internal
