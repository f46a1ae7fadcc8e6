// Tests for base/ordered_window.h: tasks taken in order, run ahead on helpers or by the
// consumer, serial windows, errors in order, Clear and destruction.
#include "base/ordered_window.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace spelt::internal {
namespace {

// The loop of a reader: task i fills slot i % window, submitted once task i - window was
// consumed; every task runs once, and is consumed in order after it returned.
TEST(OrderedWindowTest, TakesInOrderWithSlotsReusedOnlyAfterConsumption) {
  for (const int helpers : {0, 1, 3}) {
    for (const bool serial : {false, true}) {
      for (const size_t window : {1, 2, 3, 8}) {
        constexpr size_t kN = 200;
        std::vector<std::atomic<int>> ran(kN);
        std::vector<size_t> slot_task(window, ~size_t{0});
        std::mutex mu;
        std::atomic<int> running{0};
        size_t consumed = 0;
        OrderedWindow ahead({.max_helpers = helpers, .serial = serial});
        for (size_t i = 0, submitted = 0; i < kN; ++i) {
          for (; submitted < kN && submitted < i + window; ++submitted) {
            ahead.Submit([&, t = submitted] {
              const int now = ++running;
              if (serial) {
                ASSERT_EQ(now, 1);
              }
              {
                std::lock_guard<std::mutex> lock(mu);
                if (t >= window) {
                  ASSERT_GT(consumed, t - window);
                }
                slot_task[t % window] = t;
              }
              if (t % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
              ++ran[t];
              --running;
            });
          }
          ahead.Take();
          std::lock_guard<std::mutex> lock(mu);
          ASSERT_EQ(ran[i].load(), 1) << i;
          ASSERT_EQ(slot_task[i % window], i);
          consumed = i + 1;
        }
        EXPECT_EQ(ahead.size(), 0u);
        for (size_t i = 0; i < kN; ++i) EXPECT_EQ(ran[i].load(), 1);
      }
    }
  }
}

// With helpers, tasks run on more than one thread when they take a while; with none, all run
// on the consumer.
TEST(OrderedWindowTest, HelpersRunAhead) {
  for (const int helpers : {0, 2}) {
    std::mutex mu;
    std::set<std::thread::id> threads;
    OrderedWindow ahead({.max_helpers = helpers});
    for (int i = 0; i < 40; ++i) {
      ahead.Submit([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
      });
      if (ahead.size() == 6) ahead.Take();
    }
    while (ahead.size() > 0) ahead.Take();
    if (helpers == 0) {
      EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
    } else {
      EXPECT_GE(threads.size(), 2u);
    }
  }
}

// A task's error is raised by the Take that takes it, after the tasks before it were taken;
// the window goes on with the tasks after it.
TEST(OrderedWindowTest, ErrorsComeInOrder) {
  for (const int helpers : {0, 3}) {
    OrderedWindow ahead({.max_helpers = helpers});
    for (int i = 0; i < 10; ++i) {
      ahead.Submit([i] {
        if (i == 4) throw std::runtime_error("bad task");
      });
    }
    for (int i = 0; i < 4; ++i) ahead.Take();
    EXPECT_THROW(ahead.Take(), std::runtime_error);
    for (int i = 5; i < 10; ++i) ahead.Take();
    EXPECT_EQ(ahead.size(), 0u);
  }
}

// Clear and the destructor wait for running tasks and drop the others: no task runs after
// they return, and a cleared window takes new tasks.
TEST(OrderedWindowTest, ClearAndDestructionStopTasks) {
  for (const int helpers : {0, 1, 4}) {
    auto live = std::make_shared<std::atomic<bool>>(true);
    auto after = std::make_shared<std::atomic<int>>(0);
    auto ran = std::make_shared<std::atomic<int>>(0);
    const auto task = [live, after, ran] {
      if (!*live) ++*after;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++*ran;
    };
    {
      OrderedWindow ahead({.max_helpers = helpers});
      for (int i = 0; i < 50; ++i) ahead.Submit(task);
      ahead.Take();
      ahead.Clear();
      EXPECT_EQ(ahead.size(), 0u);
      const int ran_at_clear = ran->load();
      EXPECT_LT(ran_at_clear, 50);
      ahead.Submit([ran] { *ran += 1000; });
      ahead.Take();
      EXPECT_EQ(ran->load(), ran_at_clear + 1000);
      for (int i = 0; i < 50; ++i) ahead.Submit(task);
    }
    *live = false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(after->load(), 0);
  }
}

// Dropped tasks are skipped: a queued one never runs, a running one finishes unseen.
TEST(OrderedWindowTest, DroppedTasksAreSkipped) {
  std::vector<int> ran;
  {
    OrderedWindow ahead({.max_helpers = 0});
    for (int i = 0; i < 5; ++i) EXPECT_EQ(ahead.Submit([&ran, i] { ran.push_back(i); }), i);
    ahead.Drop(1);
    ahead.Drop(3);
    EXPECT_EQ(ahead.size(), 3u);
    while (ahead.size() > 0) ahead.Take();
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 2, 4}));

  std::atomic<bool> started{false}, release{false}, second{false};
  OrderedWindow ahead({.max_helpers = 1, .consumer_runs = OrderedWindow::ConsumerRuns::kNone});
  const uint64_t first = ahead.Submit([&] {
    started = true;
    while (!release) std::this_thread::yield();
    throw std::runtime_error("unseen");
  });
  while (!started) std::this_thread::yield();
  ahead.Drop(first);
  ahead.Submit([&] { second = true; });
  release = true;
  ahead.Take();  // the second task; the first one's error is dropped with it
  EXPECT_TRUE(second);
}

// kNone: the consumer only waits; kOldest: it runs the task it takes when no helper has
// started it, and helpers allowed later run the queued tasks too.
TEST(OrderedWindowTest, ConsumerRunsAsTold) {
  const std::thread::id consumer = std::this_thread::get_id();
  std::mutex mu;
  std::set<std::thread::id> threads;
  const auto task = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
  };
  {
    OrderedWindow ahead({.max_helpers = 2, .consumer_runs = OrderedWindow::ConsumerRuns::kNone});
    for (int i = 0; i < 20; ++i) ahead.Submit(task);
    while (ahead.size() > 0) ahead.Take();
    EXPECT_EQ(threads.count(consumer), 0u);
  }
  threads.clear();
  OrderedWindow ahead({.max_helpers = 0, .consumer_runs = OrderedWindow::ConsumerRuns::kOldest});
  for (int i = 0; i < 5; ++i) {
    ahead.Submit(task);
    ahead.Take();
  }
  EXPECT_EQ(threads, std::set<std::thread::id>{consumer});
  ahead.SetMaxHelpers(2);
  for (int i = 0; i < 20; ++i) ahead.Submit(task);
  while (ahead.size() > 0) ahead.Take();
  EXPECT_GE(threads.size(), 2u);
}

}  // namespace
}  // namespace spelt::internal
