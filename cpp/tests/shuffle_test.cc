// Tests for MapDataset::Shuffle (ops/shuffle.cc). Expected values marked "Grain 0.2.18" were computed with
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
  EXPECT_NO_THROW(MapDataset::Range(5).Seed(4294967295LL).Shuffle());
  // ds.seed() takes any non-negative seed (Grain: numpy's SeedSequence); Grain 0.2.18:
  // list(MapDataset.range(6).seed(2**32).shuffle()) == [5, 2, 0, 4, 1, 3].
  EXPECT_EQ(GetInts(MapDataset::Range(6).Seed(int64_t{1} << 32).Shuffle(), 6),
            (Ints{5, 2, 0, 4, 1, 3}));
}

TEST(MapDatasetShuffleTest, InfiniteDatasetIsShuffledAsOneEpoch) {
  // Grain 0.2.18: MapDataset.range(5).repeat().shuffle(seed=1)[:8].
  EXPECT_EQ(GetInts(MapDataset::Range(5).Repeat().Shuffle(1), 8), (Ints{1, 3, 2, 4, 1, 4, 1, 4}));
}

}  // namespace
}  // namespace spelt
