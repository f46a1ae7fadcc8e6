// Tests for MapDataset::Concatenate and MapDataset::Mix (concatenate.cc, mix.cc). Expected
// values were computed with Grain 0.2.18 (grain.MapDataset.concatenate / .mix, ds[i]).
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/value.h"

namespace spelt {
namespace {

using Ints = std::vector<int64_t>;

Ints GetInts(const MapDataset& ds, int64_t start, int64_t n) {
  Ints out;
  for (int64_t i = start; i < start + n; ++i) {
    std::optional<Value> v = ds.Get(i);
    EXPECT_TRUE(v.has_value()) << "index " << i;
    out.push_back(v ? v->AsInt() : -999);
  }
  return out;
}

TEST(ConcatenateTest, EpochsReadEpochsOfComponents) {
  MapDataset a = MapDataset::Concatenate({MapDataset::Range(3), MapDataset::Range(10, 14)});
  EXPECT_EQ(a.Length(), 7);
  EXPECT_EQ(GetInts(a, 0, 16), (Ints{0, 1, 2, 10, 11, 12, 13, 0, 1, 2, 10, 11, 12, 13, 0, 1}));
}

TEST(ConcatenateTest, SkipsEmptyComponents) {
  MapDataset b = MapDataset::Concatenate(
      {MapDataset::Range(4), MapDataset::Range(0), MapDataset::Range(20, 22)});
  EXPECT_EQ(b.Length(), 6);
  EXPECT_EQ(GetInts(b, 0, 12), (Ints{0, 1, 2, 3, 20, 21, 0, 1, 2, 3, 20, 21}));
}

TEST(ConcatenateTest, InfiniteComponentThrows) {
  EXPECT_THROW(MapDataset::Concatenate({MapDataset::Range(3).Repeat(), MapDataset::Range(2)}),
               std::invalid_argument);
}

TEST(ConcatenateTest, DefaultSeedDerivesThroughComponents) {
  MapDataset f =
      MapDataset::Concatenate({MapDataset::Range(6).Seed(3), MapDataset::Range(100, 106)})
          .Shuffle();
  EXPECT_EQ(GetInts(f, 0, 12), (Ints{104, 100, 2, 4, 3, 1, 5, 101, 103, 102, 0, 105}));
}

TEST(MixTest, Weighted) {
  MapDataset c = MapDataset::Mix({MapDataset::Range(10), MapDataset::Range(100, 104)},
                                 std::vector<double>{0.7, 0.3});
  EXPECT_EQ(c.Length(), 13);
  EXPECT_EQ(GetInts(c, 0, 20), (Ints{0, 1, 2, 100, 3, 4, 101, 5, 6, 102, 7, 8, 9, 103, 0, 1,
                                     100, 2, 3, 101}));
}

TEST(MixTest, UniformBeyondLengthReadsLaterEpochs) {
  MapDataset d = MapDataset::Mix({MapDataset::Range(5), MapDataset::Range(7, 10)});
  EXPECT_EQ(d.Length(), 6);
  EXPECT_EQ(GetInts(d, 0, 12), (Ints{0, 7, 1, 8, 2, 9, 3, 7, 4, 8, 0, 9}));
}

TEST(MixTest, DefaultSeedDerivesThroughComponents) {
  MapDataset e =
      MapDataset::Mix({MapDataset::Range(6).Seed(3), MapDataset::Range(100, 106)}).Shuffle();
  EXPECT_EQ(GetInts(e, 0, 12), (Ints{5, 3, 1, 2, 101, 100, 102, 103, 104, 4, 0, 105}));
}

TEST(MixTest, InfiniteComponentsAndHugeIndices) {
  MapDataset g = MapDataset::Mix({MapDataset::Range(10).Repeat(), MapDataset::Range(100, 110).Repeat()},
                                 std::vector<double>{1, 3});
  EXPECT_EQ(g.Length(), kInfiniteLength);
  EXPECT_EQ(GetInts(g, 1000000000000, 8), (Ints{0, 100, 101, 102, 1, 103, 104, 105}));
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
