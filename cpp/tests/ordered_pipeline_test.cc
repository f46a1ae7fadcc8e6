#include "base/ordered_pipeline.h"

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

// Every task is prepared once and consumed in order on the calling thread, and a slot is
// never prepared again before its last task was consumed.
TEST(OrderedPipelineTest, ConsumesInOrderWithSlotsReusedOnlyAfterConsumption) {
  for (const int num_threads : {1, 2, 4}) {
    for (const size_t window : {1, 2, 3, 8}) {
      constexpr size_t kN = 200;
      std::vector<std::atomic<int>> prepared(kN);
      std::vector<size_t> slot_task(window, ~size_t{0});  // the task a slot holds
      std::mutex mu;
      std::vector<size_t> consumed;
      const std::thread::id caller = std::this_thread::get_id();
      RunOrderedPipeline(
          kN, num_threads, window,
          [&](size_t slot, size_t i) {
            ASSERT_EQ(slot, i % window);
            {
              std::lock_guard<std::mutex> lock(mu);
              // The slot's previous task (i - window) must have been consumed.
              if (i >= window) ASSERT_GT(consumed.size(), i - window);
              slot_task[slot] = i;
            }
            ++prepared[i];
          },
          [&](size_t slot, size_t i) {
            ASSERT_EQ(std::this_thread::get_id(), caller);
            std::lock_guard<std::mutex> lock(mu);
            ASSERT_EQ(slot_task[slot], i);
            ASSERT_EQ(prepared[i].load(), 1);
            consumed.push_back(i);
          });
      ASSERT_EQ(consumed.size(), kN);
      for (size_t i = 0; i < kN; ++i) {
        EXPECT_EQ(consumed[i], i);
        EXPECT_EQ(prepared[i].load(), 1);
      }
    }
  }
}

// With helpers, tasks are prepared on more than one thread when preparing takes a while.
TEST(OrderedPipelineTest, HelpersPrepareAhead) {
  std::mutex mu;
  std::set<std::thread::id> threads;
  RunOrderedPipeline(
      40, 3, 6,
      [&](size_t, size_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
      },
      [](size_t, size_t) {});
  EXPECT_GE(threads.size(), 2u);
}

// A failed prepare(i): tasks before i are consumed, then its error; a consumer's error ends
// the call at once. No prepare runs after the call returned.
TEST(OrderedPipelineTest, ErrorsStopInOrder) {
  for (const int num_threads : {1, 3}) {
    auto live = std::make_shared<std::atomic<bool>>(true);
    std::atomic<int> after_return{0};
    std::vector<size_t> consumed;
    EXPECT_THROW(RunOrderedPipeline(
                     100, num_threads, 4,
                     [&, live](size_t, size_t i) {
                       if (!*live) ++after_return;
                       if (i == 37) throw std::runtime_error("bad task");
                     },
                     [&](size_t, size_t i) { consumed.push_back(i); }),
                 std::runtime_error);
    *live = false;
    ASSERT_EQ(consumed.size(), 37u);
    consumed.clear();
    EXPECT_THROW(RunOrderedPipeline(
                     100, num_threads, 4, [&, live](size_t, size_t) {},
                     [&](size_t, size_t i) {
                       if (i == 12) throw std::logic_error("bad consumer");
                       consumed.push_back(i);
                     }),
                 std::logic_error);
    EXPECT_EQ(consumed.size(), 12u);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(after_return.load(), 0);
  }
}

}  // namespace
}  // namespace spelt::internal
