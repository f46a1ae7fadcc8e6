// Tests for MapDataset::Repeat (ops/repeat.cc). Expected values marked "Grain 0.2.18" were computed with
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

}  // namespace
}  // namespace spelt
