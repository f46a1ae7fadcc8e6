// Internal: a pool of threads running queued tasks in FIFO order, and the one process-wide
// pool that every executor and the ArrayRecord reader share.
// Thread-safe. The destructor drops tasks that have not started and joins the threads.
#ifndef SPELT_SRC_BASE_THREAD_POOL_H_
#define SPELT_SRC_BASE_THREAD_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace spelt::internal {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `task`; it must not throw (catch inside and store the error).
  void Submit(std::function<void()> task);
  // Adds threads until there are at least `num_threads` besides those of live
  // BlockingThreads.
  void Reserve(int num_threads);

  // Threads for tasks that block for long (a remote read waiting on the network): while it
  // lives, the pool has `n` threads more than Reserve asked for, so that such tasks do not
  // hold up the others. Threads are not removed when it ends (they wait idle, and serve the
  // next one). Move-only; `pool` must outlive it.
  class BlockingThreads {
   public:
    BlockingThreads(ThreadPool& pool, int n) : pool_(&pool), n_(n) { pool.AddBlocking(n); }
    BlockingThreads(BlockingThreads&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), n_(other.n_) {}
    BlockingThreads& operator=(BlockingThreads&&) = delete;
    ~BlockingThreads() {
      if (pool_ != nullptr) pool_->AddBlocking(-n_);
    }

   private:
    ThreadPool* pool_;
    int n_;
  };

 private:
  void Run();
  // Counts `delta` threads more (or fewer) for BlockingThreads and starts those missing.
  void AddBlocking(int delta);
  // Starts threads until there are reserved_ + blocking_. REQUIRES: mu_ held.
  void Grow();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  int reserved_ = 0;  // the most that Reserve asked for
  int blocking_ = 0;  // of live BlockingThreads
  std::vector<std::thread> threads_;
};

// The process-wide pool: starts with one thread per core and grows with Reserve() (e.g. to
// ReadOptions.num_threads) and BlockingThreads (a remote file's read-ahead,
// io/sequential_reads.h). Never destroyed: tasks may still be queued when static
// destructors run. A task that waits for other tasks of this pool must also work itself
// (as the consumer of a base/ordered_window.h does), so that nested use never deadlocks.
ThreadPool& SharedThreadPool();

}  // namespace spelt::internal

#endif  // SPELT_SRC_BASE_THREAD_POOL_H_
