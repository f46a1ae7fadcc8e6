// Tests for MapDataset::FlatMap (ops/flat_map.cc), Grain 0.2.18's FlatMapMapDataset.
#include <gtest/gtest.h>

#include <atomic>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

TEST(FlatMapMapTest, FixedSlotsPerParentElement) {
  const MapDataset ds = MapDataset::Range(4).FlatMap(SplitByMod3, 3);
  EXPECT_EQ(ds.Length(), 12);
  // x -> x % 3 outputs [10x, 10x + 1]: slots past them are filtered.
  EXPECT_FALSE(ds.Get(0).has_value());
  EXPECT_EQ(ds.Get(3)->AsInt(), 10);
  EXPECT_FALSE(ds.Get(4).has_value());
  EXPECT_EQ(ds.Get(6)->AsInt(), 20);
  EXPECT_EQ(ds.Get(7)->AsInt(), 21);
  EXPECT_EQ(DrainInts(*ds.ToIter(Serial()).MakeIterator()), (Ints{10, 20, 21}));
  EXPECT_EQ(DrainInts(*ds.ToIter(Threads(2, 4)).MakeIterator()), (Ints{10, 20, 21}));
}

TEST(FlatMapMapTest, ReadsEachParentElementOncePerChunk) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  const MapDataset ds = MapDataset::Range(5).FlatMap(
      [calls](Value v) {
        ++*calls;
        return std::vector<Value>{v, v};
      },
      2);
  std::vector<std::optional<Value>> out;
  const std::vector<int64_t> indices{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ds.node()->GetMany(indices, &out);
  EXPECT_EQ(calls->load(), 5);
  ASSERT_EQ(out.size(), 10u);
  EXPECT_EQ(out[9]->AsInt(), 4);
}

TEST(FlatMapMapTest, ErrorsAndInfiniteLength) {
  const MapDataset too_many = MapDataset::Range(3).FlatMap(SplitByMod3, 1);
  EXPECT_THROW(too_many.Get(2 * 1), std::invalid_argument);  // 2 -> 2 outputs > 1
  std::vector<std::optional<Value>> out;
  const std::vector<int64_t> indices{0, 1, 2};
  EXPECT_THROW(too_many.node()->GetMany(indices, &out), std::invalid_argument);
  EXPECT_EQ(out.size(), 2u);  // the elements before the failing index
  EXPECT_THROW(MapDataset::Range(3).FlatMap(SplitByMod3, 0), std::invalid_argument);
  EXPECT_EQ(MapDataset::Range(3).Repeat().FlatMap(SplitByMod3, 2).Length(), kInfiniteLength);
  EXPECT_THROW(MapDataset::Range(3).FlatMap(SplitByMod3, 2).Batch(2), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
