// Tests for MapDataset::Mix (ops/mix.cc). Expected values marked "Grain 0.2.18" were computed with
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

TEST(MixTest, Weighted) {
  MapDataset c = MapDataset::Mix({MapDataset::Range(10), MapDataset::Range(100, 104)},
                                 std::vector<double>{0.7, 0.3});
  EXPECT_EQ(c.Length(), 13);
  EXPECT_EQ(GetInts(c, 20, 0), (Ints{0, 1, 2, 100, 3, 4, 101, 5, 6, 102, 7, 8, 9, 103, 0, 1,
                                     100, 2, 3, 101}));
}

TEST(MixTest, UniformBeyondLengthReadsLaterEpochs) {
  MapDataset d = MapDataset::Mix({MapDataset::Range(5), MapDataset::Range(7, 10)});
  EXPECT_EQ(d.Length(), 6);
  EXPECT_EQ(GetInts(d, 12, 0), (Ints{0, 7, 1, 8, 2, 9, 3, 7, 4, 8, 0, 9}));
}

TEST(MixTest, DefaultSeedDerivesThroughComponents) {
  MapDataset e =
      MapDataset::Mix({MapDataset::Range(6).Seed(3), MapDataset::Range(100, 106)}).Shuffle();
  EXPECT_EQ(GetInts(e, 12, 0), (Ints{5, 3, 1, 2, 101, 100, 102, 103, 104, 4, 0, 105}));
}

TEST(MixTest, InfiniteComponentsAndHugeIndices) {
  MapDataset g = MapDataset::Mix({MapDataset::Range(10).Repeat(), MapDataset::Range(100, 110).Repeat()},
                                 std::vector<double>{1, 3});
  EXPECT_EQ(g.Length(), kInfiniteLength);
  EXPECT_EQ(GetInts(g, 8, 1000000000000), (Ints{0, 100, 101, 102, 1, 103, 104, 105}));
}

TEST(MixTest, Errors) {
  EXPECT_THROW(MapDataset::Mix({}), std::invalid_argument);
  EXPECT_THROW(MapDataset::Mix({MapDataset::Range(3), MapDataset::Range(3)},
                               std::vector<double>{1, 0}),
               std::invalid_argument);
  EXPECT_THROW(MapDataset::Mix({MapDataset::Range(3), MapDataset::Range(0)}),
               std::invalid_argument);
  EXPECT_THROW(MapDataset::Mix({MapDataset::Range(3)}, std::vector<double>{1, 2}),
               std::invalid_argument);
}

}  // namespace
}  // namespace spelt
