// Tests for MapDataset::Concatenate (ops/concatenate.cc). Expected values marked "Grain 0.2.18" were computed with
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

TEST(ConcatenateTest, EpochsReadEpochsOfComponents) {
  MapDataset a = MapDataset::Concatenate({MapDataset::Range(3), MapDataset::Range(10, 14)});
  EXPECT_EQ(a.Length(), 7);
  EXPECT_EQ(GetInts(a, 16, 0), (Ints{0, 1, 2, 10, 11, 12, 13, 0, 1, 2, 10, 11, 12, 13, 0, 1}));
}

TEST(ConcatenateTest, SkipsEmptyComponents) {
  MapDataset b = MapDataset::Concatenate(
      {MapDataset::Range(4), MapDataset::Range(0), MapDataset::Range(20, 22)});
  EXPECT_EQ(b.Length(), 6);
  EXPECT_EQ(GetInts(b, 12, 0), (Ints{0, 1, 2, 3, 20, 21, 0, 1, 2, 3, 20, 21}));
}

TEST(ConcatenateTest, InfiniteComponentThrows) {
  EXPECT_THROW(MapDataset::Concatenate({MapDataset::Range(3).Repeat(), MapDataset::Range(2)}),
               std::invalid_argument);
}

TEST(ConcatenateTest, DefaultSeedDerivesThroughComponents) {
  MapDataset f =
      MapDataset::Concatenate({MapDataset::Range(6).Seed(3), MapDataset::Range(100, 106)})
          .Shuffle();
  EXPECT_EQ(GetInts(f, 12, 0), (Ints{104, 100, 2, 4, 3, 1, 5, 101, 103, 102, 0, 105}));
}

}  // namespace
}  // namespace spelt
