#include "base/thread_pool.h"

#include <algorithm>

namespace spelt::internal {

ThreadPool::ThreadPool(int num_threads) { Reserve(num_threads); }

void ThreadPool::Reserve(int num_threads) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ = std::max(reserved_, num_threads);
  Grow();
}

void ThreadPool::AddBlocking(int delta) {
  std::lock_guard<std::mutex> lock(mu_);
  blocking_ += delta;
  Grow();
}

void ThreadPool::Grow() {
  while (static_cast<int>(threads_.size()) < reserved_ + blocking_) {
    threads_.emplace_back([this] { Run(); });
  }
}

ThreadPool& SharedThreadPool() {
  static ThreadPool* const pool =
      new ThreadPool(std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  return *pool;
}

ThreadPool::~ThreadPool() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(tasks_);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  // `dropped` is destroyed here, outside the lock.
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace spelt::internal
