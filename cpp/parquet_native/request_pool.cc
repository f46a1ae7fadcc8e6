#include "request_pool.h"

#include <pthread.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace spelt::parquet_native {
namespace {

// One RunRequests call: its tasks left to finish.
struct Batch {
  std::mutex mu;
  std::condition_variable done;
  size_t remaining = 0;
};

struct Task {
  std::function<void()>* fn;
  Batch* batch;
};

class Pool {
 public:
  explicit Pool(int limit) : limit_(limit) {}
  int limit() const { return limit_; }  // racy outside mu_: a hint for a forked child

  void SetLimit(int limit) {
    std::lock_guard lock(mu_);
    limit_ = limit < 1 ? 1 : limit;
    wake_.notify_all();  // threads past the limit leave
  }

  void Run(std::vector<std::function<void()>>& tasks) {
    Batch batch;
    batch.remaining = tasks.size();
    {
      std::lock_guard lock(mu_);
      for (auto& fn : tasks) queue_.push_back({&fn, &batch});
      StartThreads();
    }
    // One waiting thread per task (not all of them: on a small machine a herd of threads
    // woken for a few tasks costs more than the tasks).
    for (size_t i = 0; i < tasks.size(); ++i) wake_.notify_one();
    std::unique_lock lock(batch.mu);
    batch.done.wait(lock, [&] { return batch.remaining == 0; });
  }

 private:
  // Starts a thread for each free slot below the limit. REQUIRES: mu_ held.
  void StartThreads() {
    if (alive_.size() < static_cast<size_t>(limit_)) alive_.resize(limit_, false);
    for (int slot = 0; slot < limit_; ++slot) {
      if (alive_[slot]) continue;
      alive_[slot] = true;
      std::thread([this, slot] { Work(slot); }).detach();
    }
  }

  void Work(int slot) {
    std::unique_lock lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return slot >= limit_ || !queue_.empty(); });
      if (slot >= limit_) break;
      const Task task = queue_.front();
      queue_.pop_front();
      lock.unlock();
      (*task.fn)();
      {
        std::lock_guard done(task.batch->mu);
        if (--task.batch->remaining == 0) task.batch->done.notify_one();
      }
      lock.lock();
    }
    alive_[slot] = false;
    if (!queue_.empty()) wake_.notify_one();  // a wake-up meant for a task: pass it on
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  std::vector<bool> alive_;  // per slot: whether its thread runs
  int limit_;
};

Pool* pool = nullptr;  // leaked: its threads may outlive any destructor
std::once_flag pool_once;

Pool& GetPool() {
  std::call_once(pool_once, [] {
    pool = new Pool(kDefaultMaxInFlight);
    // The child of a fork has none of the pool's threads, and its lock may be held: it
    // starts a new pool (the old one is leaked, untouched).
    pthread_atfork(nullptr, nullptr, [] { pool = new Pool(pool->limit()); });
  });
  return *pool;
}

}  // namespace

void SetRequestLimit(int limit) { GetPool().SetLimit(limit); }

void RunRequests(std::vector<std::function<void()>>& tasks) {
  if (!tasks.empty()) GetPool().Run(tasks);
}

}  // namespace spelt::parquet_native
