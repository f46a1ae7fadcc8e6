// Tests for IterDataset::Map, RandomMap and MapWithIndex (ops/iter_map.cc). Expected values marked "Grain 0.2.18" were computed with
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

TEST(IterOpsTest, MapAppliesFunctionAndPassesStateThrough) {
  auto it = RangeIter(5).Map([](Value v) { return Value(v.AsInt() * 3); }).MakeIterator();
  EXPECT_EQ(it->Next()->AsInt(), 0);
  EXPECT_EQ(it->Next()->AsInt(), 3);
  EXPECT_EQ(it->GetState(), State({{"next_index", 2}}));
  EXPECT_EQ(AsInts(Drain(*it)), (Ints{6, 9, 12}));
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
}

TEST(IterOpsTest, RandomMapMatchesGrainAndHasIndexForRngState) {
  // Grain 0.2.18: range(10).to_iter_dataset().random_map(
  //     lambda x, rng: rng.bit_generator.random_raw(), seed=123): first three outputs, state
  // {"parent": {"next_index": 3}, "index_for_rng": 3}.
  auto it = RangeIter(10).RandomMap(FirstRaw, 123).MakeIterator();
  EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", 0}}}, {"index_for_rng", 0}}));
  EXPECT_EQ(it->Next()->AsInt(), static_cast<int64_t>(16603480961932373349ULL));
  EXPECT_EQ(it->Next()->AsInt(), static_cast<int64_t>(6074937422298438193ULL));
  EXPECT_EQ(it->Next()->AsInt(), static_cast<int64_t>(11669616918904608167ULL));
  EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", 3}}}, {"index_for_rng", 3}}));
}

TEST(IterOpsTest, RandomMapCounterCountsElementsNotIndices) {
  // Grain 0.2.18: range(10).to_iter_dataset().filter(lambda x: x % 2 == 1).random_map(
  //     lambda x, rng: (x, rng.bit_generator.random_raw()), seed=123): the rng index is the
  // element count (0, 1, 2), not the source index; state {"parent": {"next_index": 6},
  // "index_for_rng": 3}.
  auto it = RangeIter(10)
                .Filter([](const Value& v) { return v.AsInt() % 2 == 1; })
                .RandomMap(
                    [](Value v, Philox& rng) {
                      return Value::Tuple({v, Value(static_cast<int64_t>(rng.NextUint64()))});
                    },
                    123)
                .MakeIterator();
  auto pair = [](int64_t x, uint64_t raw) {
    return Value::Tuple({Value(x), Value(static_cast<int64_t>(raw))});
  };
  EXPECT_EQ(*it->Next(), pair(1, 16603480961932373349ULL));
  EXPECT_EQ(*it->Next(), pair(3, 6074937422298438193ULL));
  EXPECT_EQ(*it->Next(), pair(5, 11669616918904608167ULL));
  EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", 6}}}, {"index_for_rng", 3}}));
}

TEST(IterOpsTest, RandomMapDefaultSeedsMatchGrain) {
  // Grain 0.2.18: range(10).to_iter_dataset().seed(42).random_map(raw): seed at depth 1.
  auto a = RangeIter(10).Seed(42).RandomMap(FirstRaw).MakeIterator();
  EXPECT_EQ(a->Next()->AsInt(), static_cast<int64_t>(8235517490835174605ULL));
  EXPECT_EQ(a->Next()->AsInt(), static_cast<int64_t>(12477861298032462331ULL));
  // Grain 0.2.18: range(10).seed(42).to_iter_dataset().random_map(raw): seed at depth 2.
  auto b = MapDataset::Range(10).Seed(42).ToIter(Serial()).RandomMap(FirstRaw).MakeIterator();
  EXPECT_EQ(b->Next()->AsInt(), static_cast<int64_t>(10420873452419933373ULL));
  EXPECT_EQ(b->Next()->AsInt(), static_cast<int64_t>(989466761693038438ULL));
}

TEST(IterOpsTest, RandomMapWithoutSeedThrows) {
  EXPECT_THROW(RangeIter(5).RandomMap(FirstRaw), std::invalid_argument);
  EXPECT_THROW(RangeIter(5).RandomMap(FirstRaw, -1), std::invalid_argument);
  EXPECT_THROW(RangeIter(5).Seed(-3), std::invalid_argument);
}

TEST(IterOpsTest, RandomMapRestoredDrawsAreIdentical) {
  IterDataset ds = RangeIter(20).RandomMap(FirstRaw, 9);
  auto it = ds.MakeIterator();
  std::vector<Value> all = Drain(*it);
  std::set<int64_t> unique;
  for (const Value& v : all) unique.insert(v.AsInt());
  EXPECT_EQ(unique.size(), 20u);
  auto restored = ds.MakeIterator();
  restored->SetState(State{{"parent", {{"next_index", 12}}}, {"index_for_rng", 12}});
  EXPECT_EQ(*restored->Next(), all[12]);
}

TEST(IterOpsTest, MapWithIndexCountsElementsAndHasCounterState) {
  // Grain 0.2.18: range(6).to_iter_dataset().map_with_index(lambda i, x: (i, x)) gives
  // (0, 0), (1, 1), (2, 2), state {"parent": {"next_index": 3}, "counter": 3}.
  auto it = RangeIter(6).MapWithIndex([](int64_t i, Value v) {
                          return Value::Tuple({Value(i), v});
                        }).MakeIterator();
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(*it->Next(), Value::Tuple({Value(i), Value(i)}));
  EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", 3}}}, {"counter", 3}}));
  // The index counts elements the iterator saw, after an upstream filter.
  auto filtered = RangeIter(10)
                      .Filter([](const Value& v) { return v.AsInt() >= 5; })
                      .MapWithIndex([](int64_t i, Value v) { return Value(i * 100 + v.AsInt()); })
                      .MakeIterator();
  EXPECT_EQ(AsInts(Drain(*filtered)), (Ints{5, 106, 207, 308, 409}));
  EXPECT_EQ(filtered->GetState(), State({{"parent", {{"next_index", 10}}}, {"counter", 5}}));
}

}  // namespace
}  // namespace spelt
