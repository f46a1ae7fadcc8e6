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
  // Adds threads until there are at least `num_threads`.
  void Reserve(int num_threads);

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// The process-wide pool: starts with one thread per core and grows with Reserve() (e.g. to
// ReadOptions.num_threads). Never destroyed: tasks may still be queued when static
// destructors run. A task that waits for other tasks of this pool must also work itself
// (as the consumer of a base/ordered_window.h does), so that nested use never deadlocks.
ThreadPool& SharedThreadPool();

}  // namespace spelt::internal

#endif  // SPELT_SRC_BASE_THREAD_POOL_H_
