// Tests for properties every IterDataset transformation shares: argument checks, malformed states, checkpoint/restore at every position. Expected values marked "Grain 0.2.18" were computed with
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

TEST(IterOpsTest, EmptyFunctionsThrow) {
  IterDataset ds = RangeIter(3);
  EXPECT_THROW(ds.Map(MapFn{}), std::invalid_argument);
  EXPECT_THROW(ds.Filter(FilterFn{}), std::invalid_argument);
  EXPECT_THROW(ds.MapWithIndex(MapWithIndexFn{}), std::invalid_argument);
  EXPECT_THROW(ds.RandomMap(RandomMapFn{}, 1), std::invalid_argument);
  EXPECT_THROW(ds.FlatMap(FlatMapFn{}), std::invalid_argument);
}

TEST(IterOpsTest, MalformedStatesThrowInvalidArgument) {
  auto rm = RangeIter(10).RandomMap(FirstRaw, 1).MakeIterator();
  EXPECT_THROW(rm->SetState(State{{"parent", {{"next_index", 2}}}}), std::invalid_argument);
  EXPECT_THROW(rm->SetState(State{{"index_for_rng", 2}}), std::invalid_argument);
  EXPECT_THROW(rm->SetState(State{{"parent", {{"next_index", 2}}}, {"index_for_rng", "2"}}),
               std::invalid_argument);
  EXPECT_THROW(rm->SetState(State{{"parent", {{"next_index", 99}}}, {"index_for_rng", 2}}),
               std::out_of_range);  // past the end: IndexError, as Grain
  EXPECT_THROW(rm->SetState(State{{"next_index", 2}}), std::invalid_argument);

  auto mwi = RangeIter(10).MapWithIndex([](int64_t, Value v) { return v; }).MakeIterator();
  EXPECT_THROW(mwi->SetState(State{{"parent", {{"next_index", 2}}}}), std::invalid_argument);
  EXPECT_THROW(mwi->SetState(State{{"counter", 2}}), std::invalid_argument);
  EXPECT_THROW(mwi->SetState(State::array()), std::invalid_argument);

  auto fm = RangeIter(10).FlatMap(SplitByMod3).MakeIterator();
  EXPECT_THROW(fm->SetState(State{{"parent", {{"next_index", 2}}}}), std::invalid_argument);
  EXPECT_THROW(fm->SetState(State{{"next_index_in_buffer", 0}}), std::invalid_argument);
  EXPECT_THROW(fm->SetState(State{{"parent", {{"next_index", 2}}}, {"next_index_in_buffer", -1}}),
               std::invalid_argument);
  EXPECT_THROW(fm->SetState(State{{"parent", {{"next_index", 2}}}, {"next_index_in_buffer", 0.5}}),
               std::invalid_argument);

  auto mapped = RangeIter(10).Map([](Value v) { return v; }).Batch(2).MakeIterator();
  EXPECT_THROW(mapped->SetState(State::object()), std::invalid_argument);
  EXPECT_THROW(mapped->SetState(State{{"next_index", true}}), std::invalid_argument);
}

TEST(IterOpsTest, CheckpointAtEveryPositionForEachOp) {
  auto make = [](ReadOptions o) {
    return MapDataset::Range(40).Seed(3).Shuffle().ToIter(o);
  };
  auto keep = [](const Value& v) { return v.AsInt() % 5 != 2; };
  auto add_rand = [](Value v, Philox& rng) {
    return Value(v.AsInt() * 1000 + static_cast<int64_t>(rng.NextUint64() % 1000));
  };
  // Each op alone, reading in the calling thread.
  const ReadOptions o = Serial();
  CheckRestoreAtEveryPosition(make(o).Map([](Value v) { return Value(v.AsInt() + 1); }), "map");
  CheckRestoreAtEveryPosition(make(o).Filter(keep), "filter");
  CheckRestoreAtEveryPosition(make(o).Batch(3), "batch");
  CheckRestoreAtEveryPosition(make(o).Batch(3, true), "batch drop_remainder");
  CheckRestoreAtEveryPosition(make(o).RandomMap(add_rand, 5), "random_map");
  CheckRestoreAtEveryPosition(make(o).Seed(8).RandomMap(add_rand), "seed+random_map");
  CheckRestoreAtEveryPosition(
      make(o).MapWithIndex([](int64_t i, Value v) { return Value(i * 1000 + v.AsInt()); }),
      "map_with_index");
  CheckRestoreAtEveryPosition(make(o).FlatMap(SplitByMod3), "flat_map");
  // Everything together, serial and with read-ahead threads.
  for (ReadOptions all_o : {Serial(), Threads(4, 6)}) {
    CheckRestoreAtEveryPosition(make(all_o)
                                    .Filter(keep)
                                    .FlatMap(SplitByMod3)
                                    .RandomMap(add_rand, 11)
                                    .MapWithIndex([](int64_t i, Value v) {
                                      return Value::Tuple({Value(i), v});
                                    })
                                    .Map([](Value v) { return v[1]; })
                                    .Batch(4),
                                all_o.num_threads ? "all threads" : "all serial");
  }
}

}  // namespace
}  // namespace spelt
