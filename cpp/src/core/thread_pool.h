// Internal: a fixed-size pool of threads running queued tasks in FIFO order.
// Thread-safe. The destructor drops tasks that have not started and joins the threads.
#ifndef SPELT_SRC_CORE_THREAD_POOL_H_
#define SPELT_SRC_CORE_THREAD_POOL_H_

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

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_CORE_THREAD_POOL_H_
