// Tests for VirtualShards (ops/virtual_shards.cc): one host's round robin over its virtual
// shards, its state, and a restore from the merged shards of every host.
#include <gtest/gtest.h>

#include <algorithm>

#include "spelt/virtual_shards.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

// Virtual shard v of 6: v * 10, v * 10 + 1, ... (v + 1 elements).
IterDataset Shard(int64_t v) { return MapDataset::Range(v * 10, v * 10 + v + 1).ToIter(Serial()); }

IterDataset Host(int64_t index, int64_t count) {
  std::vector<IterDataset> shards;
  for (int64_t v = index; v < 6; v += count) shards.push_back(Shard(v));
  return VirtualShards(std::move(shards), 6, index, count);
}

TEST(VirtualShardsTest, ReadsOwnedShardsRoundRobinSkippingExhausted) {
  // Host 1 of 2 owns shards 1 (2 elements), 3 (4) and 5 (6).
  auto it = Host(1, 2).MakeIterator();
  EXPECT_EQ(DrainInts(*it), (Ints{10, 30, 50, 11, 31, 51, 32, 52, 33, 53, 54, 55}));
  EXPECT_EQ(it->GetState()["next_shard"], -1);
}

TEST(VirtualShardsTest, StateNamesEachShardAndTheNextOne) {
  auto it = Host(1, 2).MakeIterator();
  for (int i = 0; i < 4; ++i) it->Next();  // 10 30 50 11: shard 1 is exhausted once read again
  const State state = it->GetState();
  EXPECT_EQ(state["num_virtual_shards"], 6);
  EXPECT_EQ(state["shard_index"], 1);
  EXPECT_EQ(state["shard_count"], 2);
  EXPECT_EQ(state["next_shard"], 3);
  EXPECT_EQ(state["shards"]["3"], (State{{"exhausted", 0}, {"state", {{"next_index", 1}}}}));
}

TEST(VirtualShardsTest, RestoresAtEveryPosition) {
  CheckRestoreAtEveryPosition(Host(0, 2), "host 0 of 2");
  CheckRestoreAtEveryPosition(Host(2, 3), "host 2 of 3");
}

TEST(VirtualShardsTest, MergedStatesRestoreOnAnotherHostCountEveryElementOnce) {
  State shards = State::object();
  Ints seen;
  for (int64_t h = 0; h < 2; ++h) {
    auto it = Host(h, 2).MakeIterator();
    for (int i = 0; i < 3 + h; ++i) seen.push_back(it->Next()->AsInt());
    shards.update(it->GetState()["shards"]);
  }
  const State merged{{"num_virtual_shards", 6}, {"shard_index", nullptr}, {"shard_count", 2},
                     {"next_shard", -1}, {"shards", shards}};
  for (int64_t h = 0; h < 3; ++h) {
    auto it = Host(h, 3).MakeIterator();
    it->SetState(merged);
    for (int64_t x : DrainInts(*it)) seen.push_back(x);
  }
  Ints expected;
  for (int64_t v = 0; v < 6; ++v) {
    for (int64_t i = 0; i <= v; ++i) expected.push_back(v * 10 + i);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, expected);
}

TEST(VirtualShardsTest, RejectsBadStatesAndArguments) {
  auto it = Host(0, 3).MakeIterator();
  EXPECT_THROW(it->SetState(State{{"next_index", 0}}), std::invalid_argument);
  State other = Host(0, 2).MakeIterator()->GetState();  // lacks shard 3 of host 0 of 3
  EXPECT_THROW(it->SetState(other), std::invalid_argument);
  EXPECT_THROW(VirtualShards({Shard(0)}, 6, 0, 3), std::invalid_argument);  // owns 2 shards
  EXPECT_THROW(VirtualShards({Shard(0)}, 2, 0, 3), std::invalid_argument);  // K < count
}

}  // namespace
}  // namespace spelt
