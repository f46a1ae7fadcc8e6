// Tests for MapDataset::Map, MapWithIndex and RandomMap (ops/map.cc). Expected values marked "Grain 0.2.18" were computed with
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

TEST(MapDatasetMapTest, MapAppliesFunctionAndKeepsLength) {
  MapDataset ds = MapDataset::Range(5).Map([](Value v) { return Value(v.AsInt() * 10 + 1); });
  EXPECT_EQ(ds.Length(), 5);
  EXPECT_EQ(GetInts(ds, 7), (Ints{1, 11, 21, 31, 41, 1, 11}));
}

TEST(MapDatasetMapTest, EmptyFunctionsThrow) {
  MapDataset ds = MapDataset::Range(5);
  EXPECT_THROW(ds.Map(MapFn{}), std::invalid_argument);
  EXPECT_THROW(ds.Filter(FilterFn{}), std::invalid_argument);
  EXPECT_THROW(ds.MapWithIndex(MapWithIndexFn{}), std::invalid_argument);
  EXPECT_THROW(ds.RandomMap(RandomMapFn{}, 1), std::invalid_argument);
}

TEST(MapDatasetMapTest, MapWithIndexGetsGlobalIndex) {
  // Grain 0.2.18: ds = MapDataset.range(10).shuffle(seed=4).map_with_index(lambda i, x: (i, x));
  // [ds[i] for i in range(12)].
  MapDataset ds = MapDataset::Range(10).Shuffle(4).MapWithIndex(
      [](int64_t i, Value v) { return Value::Tuple({Value(i), v}); });
  const int64_t expected[12][2] = {{0, 6}, {1, 0}, {2, 4}, {3, 3}, {4, 2},  {5, 1},
                                   {6, 9}, {7, 8}, {8, 7}, {9, 5}, {10, 4}, {11, 0}};
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(*ds.Get(i), Value::Tuple({Value(expected[i][0]), Value(expected[i][1])})) << i;
  }
}

TEST(MapDatasetMapTest, ExceptionFromFunctionPropagates) {
  MapDataset ds = MapDataset::Range(5).Map([](Value v) -> Value {
    if (v.AsInt() == 3) throw std::runtime_error("bad element 3");
    return v;
  });
  EXPECT_EQ(ds.Get(2)->AsInt(), 2);
  EXPECT_THROW(ds.Get(3), std::runtime_error);
  EXPECT_EQ(ds.Get(4)->AsInt(), 4);
}

// The first raw 64-bit draw of each element's rng, as an int64 bit pattern.
Value FirstRaw(Value, Philox& rng) { return Value(static_cast<int64_t>(rng.NextUint64())); }

TEST(MapDatasetRandomMapTest, RngCounterIsGlobalIndexExplicitSeed) {
  // Grain 0.2.18: MapDataset.range(10).random_map(
  //     lambda x, rng: rng.bit_generator.random_raw(), seed=123)[i] for i in 0..2.
  MapDataset ds = MapDataset::Range(10).RandomMap(FirstRaw, 123);
  EXPECT_EQ(ds.Get(0)->AsInt(), static_cast<int64_t>(16603480961932373349ULL));
  EXPECT_EQ(ds.Get(1)->AsInt(), static_cast<int64_t>(6074937422298438193ULL));
  EXPECT_EQ(ds.Get(2)->AsInt(), static_cast<int64_t>(11669616918904608167ULL));
  // Grain 0.2.18: the same with lambda x, rng: rng.random().
  MapDataset doubles = MapDataset::Range(10).RandomMap(
      [](Value, Philox& rng) { return Value(rng.NextDouble()); }, 123);
  EXPECT_DOUBLE_EQ(doubles.Get(0)->AsDouble(), 0.9000765064874395);
  EXPECT_DOUBLE_EQ(doubles.Get(1)->AsDouble(), 0.3293230175484728);
  EXPECT_DOUBLE_EQ(doubles.Get(2)->AsDouble(), 0.6326112007774987);
}

TEST(MapDatasetRandomMapTest, RngCounterIsExactly0_0_0_Index) {
  MapDataset ds = MapDataset::Range(10).RandomMap(
      [](Value v, Philox& rng) {
        const auto& c = rng.counter();
        EXPECT_EQ(c[0], 0u);
        EXPECT_EQ(c[1], 0u);
        EXPECT_EQ(c[2], 0u);
        // The counter as seen before any draw is the global index.
        return Value::Tuple({v, Value(static_cast<int64_t>(c[3]))});
      },
      77);
  for (int64_t i : {0, 5, 9, 10, 23}) {
    EXPECT_EQ(*ds.Get(i), Value::Tuple({Value(i % 10), Value(i)})) << i;
  }
  Philox expected(77);
  EXPECT_EQ(MapDataset::Range(3)
                .RandomMap([](Value, Philox& rng) {
                  return Value::Tuple({Value(static_cast<int64_t>(rng.key()[0])),
                                       Value(static_cast<int64_t>(rng.key()[1]))});
                }, 77)
                .Get(1),
            Value::Tuple({Value(static_cast<int64_t>(expected.key()[0])),
                          Value(static_cast<int64_t>(expected.key()[1]))}));
}

TEST(MapDatasetRandomMapTest, DefaultSeedFromSeedMatchesGrain) {
  // Grain 0.2.18: MapDataset.range(10).seed(42).random_map(
  //     lambda x, rng: rng.bit_generator.random_raw())[i] for i in 0, 1.
  MapDataset ds = MapDataset::Range(10).Seed(42).RandomMap(FirstRaw);
  EXPECT_EQ(ds.Get(0)->AsInt(), static_cast<int64_t>(8235517490835174605ULL));
  EXPECT_EQ(ds.Get(1)->AsInt(), static_cast<int64_t>(12477861298032462331ULL));
  // Grain 0.2.18: the same with lambda x, rng: rng.random().
  MapDataset doubles =
      MapDataset::Range(10).Seed(42).RandomMap([](Value, Philox& rng) {
        return Value(rng.NextDouble());
      });
  EXPECT_DOUBLE_EQ(doubles.Get(0)->AsDouble(), 0.44644829775529327);
  EXPECT_DOUBLE_EQ(doubles.Get(1)->AsDouble(), 0.6764262163649796);
}

TEST(MapDatasetRandomMapTest, DeterministicPerIndexAndDifferentAcrossIndices) {
  MapDataset ds = MapDataset::Range(10).RandomMap(
      [](Value v, Philox& rng) {
        // Several draws per element: the rng advances within one call.
        const int64_t a = static_cast<int64_t>(rng.NextUint64());
        const int64_t b = static_cast<int64_t>(rng.NextUint64());
        EXPECT_NE(a, b);
        return Value::Tuple({v, Value(a), Value(b)});
      },
      2024);
  std::set<int64_t> draws;
  for (int64_t i = 0; i < 30; ++i) {
    Value first = *ds.Get(i);
    EXPECT_EQ(*ds.Get(i), first) << "index " << i << " is not deterministic";
    draws.insert(first[1].AsInt());
  }
  // Indices 0..29 (three epochs) all get distinct draws.
  EXPECT_EQ(draws.size(), 30u);
  // A different seed gives different draws.
  MapDataset other = MapDataset::Range(10).RandomMap(FirstRaw, 2025);
  EXPECT_NE(other.Get(0)->AsInt(), (*ds.Get(0))[1].AsInt());
}

TEST(MapDatasetRandomMapTest, SeedsOfAnySizeMatchGrain) {
  // Grain 0.2.18: MapDataset.range(3).random_map(lambda x, rng: rng.bit_generator.random_raw(),
  // seed=s)[0] and [2]; Grain takes any non-negative seed (numpy's Philox(seed)). The same
  // draws from the IterDataset's first element (to_iter_dataset().random_map(..., seed=s)).
  struct Case {
    AnySeed seed;
    uint64_t first, third;
  };
  const Case kCases[] = {
      {uint64_t{1} << 32, 11203925021116910928ULL, 17358881401536524014ULL},
      {uint64_t{1} << 63, 5044243011692706972ULL, 7751354549969373835ULL},
      {~uint64_t{0}, 10924362251224890726ULL, 10684922937744214717ULL},
      // 2**100 + 7
      {AnySeed({7u, 0u, 0u, 16u}), 15573633258962870868ULL, 7986676883317411746ULL},
  };
  for (const Case& c : kCases) {
    MapDataset ds = MapDataset::Range(3).RandomMap(FirstRaw, c.seed);
    EXPECT_EQ(ds.Get(0)->AsInt(), static_cast<int64_t>(c.first));
    EXPECT_EQ(ds.Get(2)->AsInt(), static_cast<int64_t>(c.third));
    auto it = MapDataset::Range(3).ToIter().RandomMap(FirstRaw, c.seed).MakeIterator();
    EXPECT_EQ(it->Next()->AsInt(), static_cast<int64_t>(c.first));
  }
}

TEST(MapDatasetRandomMapTest, WithoutSeedThrows) {
  EXPECT_THROW(MapDataset::Range(5).RandomMap(FirstRaw), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(5).RandomMap(FirstRaw, -1), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
