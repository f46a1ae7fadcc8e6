// Tests for MapDataset (spelt/dataset.h): lengths, epochs, shuffle, slice, repeat, map,
// filter, random_map, batch and default-seed derivation. Expected values marked "Grain 0.2.18"
// were computed with Grain 0.2.18 (grain.MapDataset, ds[i] for each index i).
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

namespace spelt {
namespace {

using Ints = std::vector<int64_t>;

// Elements [0, n) of ds as integers (fails on a filtered element).
Ints GetInts(const MapDataset& ds, int64_t n) {
  Ints out;
  for (int64_t i = 0; i < n; ++i) {
    std::optional<Value> v = ds.Get(i);
    EXPECT_TRUE(v.has_value()) << "index " << i;
    out.push_back(v ? v->AsInt() : -999);
  }
  return out;
}

// A 1-d int64 array (a batch of int scalars) as integers.
Ints ArrayInts(const Value& v) {
  const Array& a = v.AsArray();
  EXPECT_EQ(a.dtype, DType::kInt64);
  EXPECT_EQ(a.shape.size(), 1u);
  Ints out(static_cast<size_t>(a.num_elements()));
  if (!out.empty()) std::memcpy(out.data(), a.data, a.nbytes());
  return out;
}

// ---------------------------------------------------------------------------------------
// Range and Source
// ---------------------------------------------------------------------------------------

TEST(MapDatasetRangeTest, LengthsMatchPythonRange) {
  // len(range(...)) / len(grain.MapDataset.range(...)).
  EXPECT_EQ(MapDataset::Range(10).Length(), 10);
  EXPECT_EQ(MapDataset::Range(2, 10, 3).Length(), 3);
  EXPECT_EQ(MapDataset::Range(10, 2, -3).Length(), 3);
  EXPECT_EQ(MapDataset::Range(5, 5).Length(), 0);
  EXPECT_EQ(MapDataset::Range(5, 0).Length(), 0);
  EXPECT_EQ(MapDataset::Range(0, 5, -1).Length(), 0);
  EXPECT_EQ(MapDataset::Range(-3, 4, 2).Length(), 4);
  EXPECT_EQ(MapDataset::Range(10, -10, -7).Length(), 3);
  EXPECT_EQ(MapDataset::Range(0).Length(), 0);
  EXPECT_EQ(MapDataset::Range(-5).Length(), 0);
}

TEST(MapDatasetRangeTest, HugeStepDoesNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // Python: len(range(0, 2**63-1, 2**63-1)) == 1, len(range(0, 10, 2**63-1)) == 1,
  // len(range(5, -5, -(2**63-1))) == 1.
  EXPECT_EQ(MapDataset::Range(0, kMax, kMax).Length(), 1);
  EXPECT_EQ(MapDataset::Range(0, 10, kMax).Length(), 1);
  EXPECT_EQ(MapDataset::Range(5, -5, -kMax).Length(), 1);
  EXPECT_EQ(MapDataset::Range(0, 10, kMax).Get(0)->AsInt(), 0);
}

TEST(MapDatasetRangeTest, ElementsMatchPythonRange) {
  EXPECT_EQ(GetInts(MapDataset::Range(10, -10, -7), 3), (Ints{10, 3, -4}));
  EXPECT_EQ(GetInts(MapDataset::Range(-3, 4, 2), 4), (Ints{-3, -1, 1, 3}));
}

TEST(MapDatasetRangeTest, ZeroStepThrows) {
  EXPECT_THROW(MapDataset::Range(0, 10, 0), std::invalid_argument);
}

TEST(MapDatasetRangeTest, IndexBeyondLengthWrapsIntoLaterEpochs) {
  // Grain 0.2.18: [MapDataset.range(2, 10, 3)[i] for i in range(7)].
  EXPECT_EQ(GetInts(MapDataset::Range(2, 10, 3), 7), (Ints{2, 5, 8, 2, 5, 8, 2}));
}

TEST(MapDatasetRangeTest, NegativeIndexThrowsOutOfRange) {
  EXPECT_THROW(MapDataset::Range(10).Get(-1), std::out_of_range);
}

TEST(MapDatasetRangeTest, GetOnEmptyDatasetThrows) {
  EXPECT_THROW(MapDataset::Range(0).Get(0), std::out_of_range);
}

TEST(MapDatasetSourceTest, SourceWrapsIndexModuloLength) {
  auto src = std::make_shared<InMemorySource>(
      std::vector<Value>{Value::Text("a"), Value::Text("b"), Value::Text("c")});
  MapDataset ds = MapDataset::Source(src);
  EXPECT_EQ(ds.Length(), 3);
  const char* expected[] = {"a", "b", "c", "a", "b", "c", "a"};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(*ds.Get(i), Value::Text(expected[i])) << i;
  }
  EXPECT_EQ(ds.Get(3 * 1000000 + 1)->as<String>().data, "b");
}

TEST(MapDatasetSourceTest, NullSourceThrows) {
  EXPECT_THROW(MapDataset::Source(nullptr), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Shuffle
// ---------------------------------------------------------------------------------------

TEST(MapDatasetShuffleTest, GoldenSeed42) {
  // Grain 0.2.18: list(MapDataset.range(10).seed(42).shuffle()).
  MapDataset ds = MapDataset::Range(10).Seed(42).Shuffle();
  EXPECT_EQ(ds.Length(), 10);
  EXPECT_EQ(GetInts(ds, 10), (Ints{1, 7, 6, 9, 0, 8, 4, 5, 3, 2}));
}

TEST(MapDatasetShuffleTest, EpochsAreDifferentPermutationsExplicitSeed) {
  // Grain 0.2.18: [MapDataset.range(7).shuffle(seed=5)[i] for i in range(21)].
  MapDataset ds = MapDataset::Range(7).Shuffle(5);
  EXPECT_EQ(GetInts(ds, 21), (Ints{4, 0, 5, 3, 1, 6, 2, 2, 5, 0, 3, 1, 4, 6,
                                   4, 0, 3, 1, 2, 5, 6}));
}

TEST(MapDatasetShuffleTest, EpochsAreDifferentPermutationsDefaultSeed) {
  // Grain 0.2.18: [MapDataset.range(7).seed(42).shuffle()[i] for i in range(21)].
  MapDataset ds = MapDataset::Range(7).Seed(42).Shuffle();
  EXPECT_EQ(GetInts(ds, 21), (Ints{1, 5, 6, 2, 0, 3, 4, 4, 1, 3, 0, 5, 6, 2,
                                   1, 4, 0, 2, 3, 6, 5}));
}

TEST(MapDatasetShuffleTest, EachEpochIsAPermutationAndEpochsDiffer) {
  MapDataset ds = MapDataset::Range(100).Shuffle(123);
  std::vector<Ints> epochs;
  for (int e = 0; e < 4; ++e) {
    Ints epoch;
    for (int i = 0; i < 100; ++i) epoch.push_back(ds.Get(e * 100 + i)->AsInt());
    std::set<int64_t> unique(epoch.begin(), epoch.end());
    EXPECT_EQ(unique.size(), 100u) << "epoch " << e;
    EXPECT_EQ(*unique.begin(), 0);
    EXPECT_EQ(*unique.rbegin(), 99);
    epochs.push_back(epoch);
  }
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) EXPECT_NE(epochs[a], epochs[b]) << a << " vs " << b;
  }
}

TEST(MapDatasetShuffleTest, EpochSeedWrapsModulo2To32) {
  // Grain 0.2.18: [MapDataset.range(5).shuffle(seed=2**32-1)[i] for i in range(10)]; the
  // second epoch uses seed (2**32-1 + 1) % 2**32 == 0, i.e. equals shuffle(seed=0)'s first.
  EXPECT_EQ(GetInts(MapDataset::Range(5).Shuffle(4294967295LL), 10),
            (Ints{2, 1, 4, 3, 0, 0, 4, 1, 2, 3}));
  EXPECT_EQ(GetInts(MapDataset::Range(5).Shuffle(0), 5), (Ints{0, 4, 1, 2, 3}));
}

TEST(MapDatasetShuffleTest, WithoutAnySeedThrows) {
  EXPECT_THROW(MapDataset::Range(5).Shuffle(), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(5).Map([](Value v) { return v; }).Shuffle(),
               std::invalid_argument);
}

TEST(MapDatasetShuffleTest, SeedOutOfRangeThrows) {
  EXPECT_THROW(MapDataset::Range(5).Shuffle(-1), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(5).Shuffle(int64_t{1} << 32), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(5).Seed(-1), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(5).Seed(int64_t{1} << 32), std::invalid_argument);
  EXPECT_NO_THROW(MapDataset::Range(5).Seed(4294967295LL).Shuffle());
}

TEST(MapDatasetShuffleTest, InfiniteDatasetCannotBeShuffled) {
  EXPECT_THROW(MapDataset::Range(5).Repeat().Shuffle(1), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Default seed derivation (Grain's _default_seed: SeedSequence of (seed, depth) pairs)
// ---------------------------------------------------------------------------------------

TEST(MapDatasetSeedTest, DerivedSeedsMatchGrain) {
  // Grain 0.2.18: list(...) of each pipeline.
  EXPECT_EQ(GetInts(MapDataset::Range(10).Seed(42).Shuffle().Seed(7).Shuffle(), 10),
            (Ints{5, 2, 1, 3, 0, 6, 8, 4, 9, 7}));
  EXPECT_EQ(GetInts(MapDataset::Range(10).Seed(42).Shuffle().Shuffle(), 10),
            (Ints{2, 3, 1, 9, 4, 0, 5, 6, 8, 7}));
  EXPECT_EQ(GetInts(MapDataset::Range(10).Seed(42).Map([](Value v) { return v; }).Shuffle(), 10),
            (Ints{9, 8, 0, 3, 6, 4, 7, 2, 5, 1}));
  EXPECT_EQ(GetInts(MapDataset::Range(10).Shuffle(1).Seed(42).Shuffle(), 10),
            (Ints{7, 2, 9, 3, 5, 1, 4, 8, 0, 6}));
}

TEST(MapDatasetSeedTest, DefaultSeedIsForANodeOnTop) {
  // DefaultSeed() of a node is the seed Grain derives for a transformation placed on top of
  // it. Grain 0.2.18: MapDataset.range(10).seed(42).shuffle()._default_seed == 3329053876
  // (SeedSequence([42, 1])), and with a map in between 955475868 (SeedSequence([42, 2])).
  EXPECT_EQ(MapDataset::Range(10).Seed(42).node()->DefaultSeed(), 3329053876u);
  EXPECT_EQ(MapDataset::Range(10).Seed(42).Map([](Value v) { return v; }).node()->DefaultSeed(),
            955475868u);
  EXPECT_EQ(MapDataset::Range(10).node()->DefaultSeed(), std::nullopt);
  // The nearest seed hides seeds further up.
  EXPECT_EQ(MapDataset::Range(10).Seed(1).Shuffle().Seed(42).node()->DefaultSeed(), 3329053876u);
}

TEST(MapDatasetSeedTest, SeedIsAPassThrough) {
  MapDataset ds = MapDataset::Range(3, 9).Seed(5);
  EXPECT_EQ(ds.Length(), 6);
  EXPECT_EQ(GetInts(ds, 8), (Ints{3, 4, 5, 6, 7, 8, 3, 4}));
}

TEST(MapDatasetSeedTest, ExplicitSeedWinsOverDefault) {
  EXPECT_EQ(GetInts(MapDataset::Range(7).Seed(42).Shuffle(5), 7),
            GetInts(MapDataset::Range(7).Shuffle(5), 7));
}

// ---------------------------------------------------------------------------------------
// Slice
// ---------------------------------------------------------------------------------------

struct SliceCase {
  std::optional<int64_t> start, stop, step;
  Ints expected;  // ds[i] for i in range(2 * len + 1); len = expected.size() / 2
};

TEST(MapDatasetSliceTest, PythonSliceSemanticsIncludingLaterEpochs) {
  constexpr auto N = std::nullopt;
  // Grain 0.2.18: ds = MapDataset.range(10)[start:stop:step];
  //               [ds[i] for i in range(2 * len(ds) + 1)].
  const SliceCase kCases[] = {
      {2, 8, N, {2, 3, 4, 5, 6, 7, 2, 3, 4, 5, 6, 7, 2}},
      {N, N, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9}},
      {-3, N, N, {7, 8, 9, 7, 8, 9, 7}},
      {1, N, 3, {1, 4, 7, 1, 4, 7, 1}},
      {8, 2, -2, {8, 6, 4, 8, 6, 4, 8}},
      {-100, 100, N, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0}},
      {N, N, -3, {9, 6, 3, 0, 9, 6, 3, 0, 9}},
      {-2, -8, -2, {8, 6, 4, 8, 6, 4, 8}},
      {N, -100, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9}},
  };
  for (const SliceCase& c : kCases) {
    MapDataset ds = MapDataset::Range(10).Slice(c.start, c.stop, c.step);
    const int64_t len = static_cast<int64_t>(c.expected.size()) / 2;
    EXPECT_EQ(ds.Length(), len) << c.start.value_or(-999) << ":" << c.stop.value_or(-999) << ":"
                                << c.step.value_or(-999);
    EXPECT_EQ(GetInts(ds, 2 * len + 1), c.expected)
        << c.start.value_or(-999) << ":" << c.stop.value_or(-999) << ":"
        << c.step.value_or(-999);
  }
}

TEST(MapDatasetSliceTest, EmptySlices) {
  // Grain 0.2.18: len(MapDataset.range(10)[100:200]) == 0, len(...[5:-1:-1]) == 0.
  EXPECT_EQ(MapDataset::Range(10).Slice(100, 200).Length(), 0);
  EXPECT_EQ(MapDataset::Range(10).Slice(5, -1, -1).Length(), 0);
  EXPECT_EQ(MapDataset::Range(10).Slice(7, 3).Length(), 0);
  EXPECT_THROW(MapDataset::Range(10).Slice(7, 3).Get(0), std::out_of_range);
}

TEST(MapDatasetSliceTest, HugeStep) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // Python: len(range(10)[::2**63-1]) == 1, len(range(10)[::-(2**63-1)]) == 1.
  MapDataset fwd = MapDataset::Range(10).Slice(std::nullopt, std::nullopt, kMax);
  EXPECT_EQ(fwd.Length(), 1);
  EXPECT_EQ(fwd.Get(0)->AsInt(), 0);
  MapDataset bwd = MapDataset::Range(10).Slice(std::nullopt, std::nullopt, -kMax);
  EXPECT_EQ(bwd.Length(), 1);
  EXPECT_EQ(bwd.Get(0)->AsInt(), 9);
}

TEST(MapDatasetSliceTest, ZeroStepThrows) {
  EXPECT_THROW(MapDataset::Range(10).Slice(0, 5, 0), std::invalid_argument);
}

TEST(MapDatasetSliceTest, SliceOfShuffleReadsLaterEpochsOfParent) {
  // Grain 0.2.18: ds = MapDataset.range(10).seed(3).shuffle()[2:7]; [ds[i] for i in range(15)].
  MapDataset base = MapDataset::Range(10).Seed(3).Shuffle();
  EXPECT_EQ(GetInts(base.Slice(2, 7), 15),
            (Ints{9, 7, 5, 3, 1, 3, 7, 9, 0, 5, 7, 9, 8, 1, 6}));
  // Grain 0.2.18: the same with [::-2].
  EXPECT_EQ(GetInts(base.Slice(std::nullopt, std::nullopt, -2), 15),
            (Ints{0, 8, 3, 7, 6, 6, 4, 0, 7, 1, 2, 5, 1, 9, 0}));
}

TEST(MapDatasetSliceTest, SliceOfSlice) {
  // range(20)[3:17][::-3] == [16, 13, 10, 7, 4].
  MapDataset ds = MapDataset::Range(20).Slice(3, 17).Slice(std::nullopt, std::nullopt, -3);
  EXPECT_EQ(ds.Length(), 5);
  EXPECT_EQ(GetInts(ds, 5), (Ints{16, 13, 10, 7, 4}));
}

// ---------------------------------------------------------------------------------------
// Repeat
// ---------------------------------------------------------------------------------------

TEST(MapDatasetRepeatTest, Lengths) {
  EXPECT_EQ(MapDataset::Range(4).Repeat(3).Length(), 12);
  EXPECT_EQ(MapDataset::Range(4).Repeat().Length(), kInfiniteLength);
  EXPECT_EQ(MapDataset::Range(4).Repeat(1).Length(), 4);
  EXPECT_EQ(MapDataset::Range(0).Repeat(5).Length(), 0);
  // Saturates instead of overflowing.
  EXPECT_EQ(MapDataset::Range(4).Repeat(kInfiniteLength / 2).Length(), kInfiniteLength);
}

TEST(MapDatasetRepeatTest, InvalidArguments) {
  EXPECT_THROW(MapDataset::Range(4).Repeat(0), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(4).Repeat(-2), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(4).Repeat().Repeat(2), std::invalid_argument);
}

TEST(MapDatasetRepeatTest, ShuffleThenRepeatReseedsEachEpoch) {
  // Grain 0.2.18: list(MapDataset.range(5).shuffle(seed=9).repeat(3)).
  MapDataset ds = MapDataset::Range(5).Shuffle(9).Repeat(3);
  EXPECT_EQ(ds.Length(), 15);
  EXPECT_EQ(GetInts(ds, 15), (Ints{1, 0, 4, 3, 2, 4, 0, 1, 3, 2, 2, 0, 1, 3, 4}));
}

TEST(MapDatasetRepeatTest, ShuffleThenRepeatWithoutReseedReplaysEpochZero) {
  // Grain 0.2.18: list(MapDataset.range(5).shuffle(seed=9).repeat(3, reseed_each_epoch=False)).
  MapDataset ds = MapDataset::Range(5).Shuffle(9).Repeat(3, /*reseed_each_epoch=*/false);
  EXPECT_EQ(GetInts(ds, 15), (Ints{1, 0, 4, 3, 2, 1, 0, 4, 3, 2, 1, 0, 4, 3, 2}));
  // Beyond the repeated length, still epoch 0 of the parent.
  EXPECT_EQ(GetInts(ds, 20).back(), 2);
}

TEST(MapDatasetRepeatTest, InfiniteRepeatReadsEveryEpoch) {
  MapDataset ds = MapDataset::Range(3).Repeat();
  EXPECT_EQ(ds.Get(3000000001)->AsInt(), 3000000001 % 3);
  MapDataset shuffled = MapDataset::Range(5).Shuffle(9).Repeat();
  EXPECT_EQ(GetInts(shuffled, 15), (Ints{1, 0, 4, 3, 2, 4, 0, 1, 3, 2, 2, 0, 1, 3, 4}));
}

// ---------------------------------------------------------------------------------------
// Map, MapWithIndex, Filter
// ---------------------------------------------------------------------------------------

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

TEST(MapDatasetMapTest, FilterReturnsNulloptForRemovedElements) {
  // Grain 0.2.18: ds = MapDataset.range(10).filter(lambda x: x % 3 != 0);
  // [ds[i] for i in range(12)] == [None, 1, 2, None, 4, 5, None, 7, 8, None, None, 1].
  MapDataset ds = MapDataset::Range(10).Filter([](const Value& v) { return v.AsInt() % 3 != 0; });
  EXPECT_EQ(ds.Length(), 10);
  const int64_t expected[12] = {-1, 1, 2, -1, 4, 5, -1, 7, 8, -1, -1, 1};
  for (int i = 0; i < 12; ++i) {
    std::optional<Value> v = ds.Get(i);
    if (expected[i] < 0) {
      EXPECT_FALSE(v.has_value()) << i;
    } else {
      ASSERT_TRUE(v.has_value()) << i;
      EXPECT_EQ(v->AsInt(), expected[i]) << i;
    }
  }
}

TEST(MapDatasetMapTest, MapIsNotCalledOnFilteredElements) {
  int calls = 0;
  MapDataset ds = MapDataset::Range(10)
                      .Filter([](const Value& v) { return v.AsInt() % 2 == 0; })
                      .Map([&calls](Value v) {
                        ++calls;
                        return Value(v.AsInt() + 100);
                      })
                      .MapWithIndex([&calls](int64_t, Value v) {
                        ++calls;
                        return v;
                      });
  EXPECT_FALSE(ds.Get(1).has_value());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(ds.Get(2)->AsInt(), 102);
  EXPECT_EQ(calls, 2);
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

// ---------------------------------------------------------------------------------------
// RandomMap
// ---------------------------------------------------------------------------------------

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

TEST(MapDatasetRandomMapTest, WithoutSeedThrows) {
  EXPECT_THROW(MapDataset::Range(5).RandomMap(FirstRaw), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(5).RandomMap(FirstRaw, -1), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Batch
// ---------------------------------------------------------------------------------------

TEST(MapDatasetBatchTest, Lengths) {
  EXPECT_EQ(MapDataset::Range(10).Batch(3).Length(), 4);
  EXPECT_EQ(MapDataset::Range(10).Batch(3, true).Length(), 3);
  EXPECT_EQ(MapDataset::Range(9).Batch(3).Length(), 3);
  EXPECT_EQ(MapDataset::Range(9).Batch(3, true).Length(), 3);
  EXPECT_EQ(MapDataset::Range(2).Batch(3).Length(), 1);
  EXPECT_EQ(MapDataset::Range(2).Batch(3, true).Length(), 0);
  EXPECT_EQ(MapDataset::Range(0).Batch(3).Length(), 0);
  EXPECT_EQ(MapDataset::Range(3).Repeat().Batch(2).Length(), kInfiniteLength);
}

TEST(MapDatasetBatchTest, BatchesDoNotSpanEpochs) {
  // Grain 0.2.18: ds = MapDataset.range(10).batch(3); [ds[i].tolist() for i in range(8)].
  MapDataset ds = MapDataset::Range(10).Batch(3);
  const Ints expected[] = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9},
                           {0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ArrayInts(*ds.Get(i)), expected[i]) << i;
}

TEST(MapDatasetBatchTest, DropRemainderBatchesDoNotSpanEpochs) {
  // Grain 0.2.18: ds = MapDataset.range(10).batch(3, drop_remainder=True); 8 indices.
  MapDataset ds = MapDataset::Range(10).Batch(3, true);
  const Ints expected[] = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 1, 2},
                           {3, 4, 5}, {6, 7, 8}, {0, 1, 2}, {3, 4, 5}};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ArrayInts(*ds.Get(i)), expected[i]) << i;
}

TEST(MapDatasetBatchTest, BatchOfShuffleUsesEachEpochsPermutation) {
  // range(7).shuffle(seed=5) over 2 epochs is (Grain 0.2.18)
  // [4, 0, 5, 3, 1, 6, 2 | 2, 5, 0, 3, 1, 4, 6]; batch(3) has 3 batches per epoch and
  // batch 3 is epoch 1's first batch.
  MapDataset ds = MapDataset::Range(7).Shuffle(5).Batch(3);
  EXPECT_EQ(ds.Length(), 3);
  EXPECT_EQ(ArrayInts(*ds.Get(0)), (Ints{4, 0, 5}));
  EXPECT_EQ(ArrayInts(*ds.Get(2)), (Ints{2}));
  EXPECT_EQ(ArrayInts(*ds.Get(3)), (Ints{2, 5, 0}));
  EXPECT_EQ(ArrayInts(*ds.Get(5)), (Ints{6}));
}

TEST(MapDatasetBatchTest, CustomBatchFnGetsTheElements) {
  MapDataset ds = MapDataset::Range(5).Batch(2, false, [](std::vector<Value> elements) {
    int64_t sum = 0;
    for (const Value& v : elements) sum += v.AsInt();
    return Value::Tuple({Value(static_cast<int64_t>(elements.size())), Value(sum)});
  });
  EXPECT_EQ(*ds.Get(0), Value::Tuple({Value(2), Value(1)}));
  EXPECT_EQ(*ds.Get(2), Value::Tuple({Value(1), Value(4)}));
  EXPECT_EQ(*ds.Get(3), Value::Tuple({Value(2), Value(1)}));
}

TEST(MapDatasetBatchTest, InvalidBatchSizeThrows) {
  EXPECT_THROW(MapDataset::Range(5).Batch(0), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(5).Batch(-3), std::invalid_argument);
}

TEST(MapDatasetBatchTest, BatchAfterFilterThrows) {
  auto keep_even = [](const Value& v) { return v.AsInt() % 2 == 0; };
  EXPECT_THROW(MapDataset::Range(10).Filter(keep_even).Batch(2), std::invalid_argument);
  // Also when the filter is further up the pipeline.
  EXPECT_THROW(MapDataset::Range(10)
                   .Filter(keep_even)
                   .Map([](Value v) { return v; })
                   .Shuffle(3)
                   .Batch(2),
               std::invalid_argument);
  // A filter downstream of the batch is fine.
  EXPECT_NO_THROW(MapDataset::Range(10).Batch(2).Filter([](const Value&) { return true; }));
}

}  // namespace
}  // namespace spelt
