// Tests for IterDataset::FlatMap (ops/iter_flat_map.cc). Expected values marked "Grain 0.2.18" were computed with
// Grain 0.2.18.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/random.h"
#include "spelt/source.h"
#include "spelt/value.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

TEST(IterOpsTest, FlatMapValuesAndStatesMatchGrain) {
  // Grain 0.2.18: FlatMapIterDataset(range(6).to_iter_dataset(), x -> [10x + j for j in
  // range(x % 3)]): (element, state) after each next().
  auto it = RangeIter(6).FlatMap(SplitByMod3).MakeIterator();
  EXPECT_EQ(it->GetState(),
            State({{"parent", {{"next_index", 0}}}, {"next_index_in_buffer", 0}}));
  const int64_t kValues[] = {10, 20, 21, 40, 50, 51};
  const int64_t kParent[] = {1, 2, 2, 4, 5, 5};
  const int64_t kInBuffer[] = {1, 1, 2, 1, 1, 2};
  for (int i = 0; i < 6; ++i) {
    std::optional<Value> v = it->Next();
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->AsInt(), kValues[i]);
    EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", kParent[i]}}},
                                     {"next_index_in_buffer", kInBuffer[i]}}))
        << "after " << i;
  }
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
}

TEST(IterOpsTest, FlatMapRestoreMidBuffer) {
  // Restoring {"parent": state before element 5, "next_index_in_buffer": 1} re-reads 5 and
  // skips its first output (50); 6 has no outputs and 7 has one.
  auto it = RangeIter(8).FlatMap(SplitByMod3).MakeIterator();
  it->SetState(State{{"parent", {{"next_index", 5}}}, {"next_index_in_buffer", 1}});
  EXPECT_EQ(it->GetState(),
            State({{"parent", {{"next_index", 5}}}, {"next_index_in_buffer", 1}}));
  EXPECT_EQ(AsInts(Drain(*it)), (Ints{51, 70}));
}

TEST(IterOpsTest, FlatMapAllEmptySplits) {
  auto it = RangeIter(20).FlatMap([](Value) { return std::vector<Value>{}; }).MakeIterator();
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
}

TEST(IterOpsTest, FlatMapCheckpointAtEveryPosition) {
  // Fan-outs of 0..4 elements, so checkpoints land at every position inside buffers.
  auto fan = [](Value v) {
    std::vector<Value> out;
    const int64_t x = v.AsInt();
    for (int64_t j = 0; j < (x * 7) % 5; ++j) out.push_back(Value(x * 100 + j));
    return out;
  };
  CheckRestoreAtEveryPosition(RangeIter(25).FlatMap(fan), "flat_map");
  CheckRestoreAtEveryPosition(
      MapDataset::Range(25).Seed(1).Shuffle().ToIter(Threads(4, 8)).FlatMap(fan).Batch(3),
      "flat_map+batch threads");
}

}  // namespace
}  // namespace spelt
