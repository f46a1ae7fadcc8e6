// Tests for MapDataset::Batch and IterDataset::Batch (ops/batch.cc). Expected values marked "Grain 0.2.18" were computed with
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

TEST(MapDatasetBatchTest, Lengths) {
  EXPECT_EQ(MapDataset::Range(10).Batch(3).Length(), 4);
  EXPECT_EQ(MapDataset::Range(10).Batch(3, true).Length(), 3);
  EXPECT_EQ(MapDataset::Range(9).Batch(3).Length(), 3);
  EXPECT_EQ(MapDataset::Range(9).Batch(3, true).Length(), 3);
  EXPECT_EQ(MapDataset::Range(2).Batch(3).Length(), 1);
  EXPECT_EQ(MapDataset::Range(2).Batch(3, true).Length(), 0);
  EXPECT_EQ(MapDataset::Range(0).Batch(3).Length(), 0);
  // Grain: sys.maxsize // batch_size.
  EXPECT_EQ(MapDataset::Range(3).Repeat().Batch(2).Length(), kInfiniteLength / 2);
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

TEST(IterOpsTest, BatchValuesAndStatesMatchGrain) {
  // Grain 0.2.18: it = iter(range(10).to_iter_dataset().batch(3)); states after each batch
  // are next_index 3, 6, 9, 10.
  auto it = RangeIter(10).Batch(3).MakeIterator();
  const Ints kBatches[] = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}};
  const int64_t kNext[] = {3, 6, 9, 10};
  for (int i = 0; i < 4; ++i) {
    std::optional<Value> b = it->Next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(ArrayInts(*b), kBatches[i]);
    EXPECT_EQ(it->GetState(), State({{"next_index", kNext[i]}}));
  }
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
}

TEST(IterOpsTest, BatchDropRemainder) {
  // Grain 0.2.18: list(range(10).to_iter_dataset().batch(3, drop_remainder=True)).
  auto it = RangeIter(10).Batch(3, true).MakeIterator();
  std::vector<Value> batches = Drain(*it);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(ArrayInts(batches[2]), (Ints{6, 7, 8}));
  EXPECT_FALSE(it->Next().has_value());
  // Exact multiple: nothing dropped.
  auto exact = RangeIter(9).Batch(3, true).MakeIterator();
  EXPECT_EQ(Drain(*exact).size(), 3u);
  // Fewer elements than one batch.
  auto tiny = RangeIter(2).Batch(3, true).MakeIterator();
  EXPECT_FALSE(tiny->Next().has_value());
}

TEST(IterOpsTest, BatchAfterFilterHasFullBatches) {
  auto it = RangeIter(20)
                .Filter([](const Value& v) { return v.AsInt() % 3 == 0; })
                .Batch(3)
                .MakeIterator();
  std::vector<Value> batches = Drain(*it);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(ArrayInts(batches[0]), (Ints{0, 3, 6}));
  EXPECT_EQ(ArrayInts(batches[1]), (Ints{9, 12, 15}));
  EXPECT_EQ(ArrayInts(batches[2]), (Ints{18}));
}

TEST(IterOpsTest, BatchCustomFnAndInvalidSize) {
  auto it = RangeIter(5)
                .Batch(2, false,
                       [](std::vector<Value> xs) {
                         return Value(static_cast<int64_t>(xs.size()) * 100 + xs[0].AsInt());
                       })
                .MakeIterator();
  EXPECT_EQ(AsInts(Drain(*it)), (Ints{200, 202, 104}));
  EXPECT_THROW(RangeIter(5).Batch(0), std::invalid_argument);
  EXPECT_THROW(RangeIter(5).Batch(-1), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
