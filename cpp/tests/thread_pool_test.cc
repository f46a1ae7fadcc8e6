// Tests for base/thread_pool.h: Reserve and BlockingThreads add threads that run tasks at once.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace spelt::internal {
namespace {

// Submits `n` tasks that each wait until all `n` run at once (or 2 s pass) and returns whether
// they did: whether the pool has `n` threads free.
bool RunsAtOnce(ThreadPool& pool, int n) {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0, met = 0, finished = 0;
  for (int i = 0; i < n; ++i) {
    pool.Submit([&] {
      std::unique_lock lock(mu);
      ++started;
      cv.notify_all();
      if (cv.wait_for(lock, std::chrono::seconds(2), [&] { return started == n; })) ++met;
      ++finished;
      cv.notify_all();
    });
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return finished == n; });
  return met == n;
}

TEST(ThreadPoolTest, BlockingThreadsAddThreadsWhileTheyLive) {
  ThreadPool pool(1);
  EXPECT_FALSE(RunsAtOnce(pool, 2));  // one thread: the second task starts after the first
  {
    ThreadPool::BlockingThreads reads(pool, 2);
    EXPECT_TRUE(RunsAtOnce(pool, 3));
    ThreadPool::BlockingThreads more(std::move(reads));  // moved: counted once
    pool.Reserve(1);  // not more than the 1 + 2 there are
    EXPECT_FALSE(RunsAtOnce(pool, 4));
    ThreadPool::BlockingThreads other(pool, 1);  // on top of the others'
    EXPECT_TRUE(RunsAtOnce(pool, 4));
  }
  EXPECT_TRUE(RunsAtOnce(pool, 4));  // the threads stay, idle, after the reservations end
}

}  // namespace
}  // namespace spelt::internal
