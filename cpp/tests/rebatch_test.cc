// Tests for IterDataset::Rebatch (ops/rebatch.cc). Expected outputs and states are Grain
// 0.2.18's.
#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

Ints Rows(const std::vector<Value>& batches) {
  Ints out;
  for (const Value& b : batches) out.push_back(b.AsArray().shape[0]);
  return out;
}

TEST(RebatchTest, CutsAndJoinsBatchesWithGrainStates) {
  auto it = RangeIter(10).Batch(3).Rebatch(4).MakeIterator();
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{0, 1, 2, 3}));
  EXPECT_EQ(it->GetState(), (State{{"parent", {{"next_index", 3}}}, {"batch_idx", 1}}));
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{4, 5, 6, 7}));
  EXPECT_EQ(it->GetState(), (State{{"parent", {{"next_index", 6}}}, {"batch_idx", 2}}));
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{8, 9}));
  EXPECT_EQ(it->GetState(), (State{{"parent", {{"next_index", 10}}}, {"batch_idx", 1}}));
  EXPECT_FALSE(it->Next().has_value());
}

TEST(RebatchTest, DropRemainderAndSplittingBigBatches) {
  EXPECT_EQ(Rows(Drain(*RangeIter(10).Batch(3).Rebatch(4, true).MakeIterator())),
            (Ints{4, 4}));
  EXPECT_EQ(Rows(Drain(*RangeIter(11).Batch(7).Rebatch(2).MakeIterator())),
            (Ints{2, 2, 2, 2, 2, 1}));
}

TEST(RebatchTest, ConcatenatesDictLeavesWithNumpyPromotion) {
  // {"a": int64 rows, "b": float rows}: a batch spanning parent batches is concatenated.
  const IterDataset ds = RangeIter(5)
                             .Map([](Value v) {
                               return Value::Dict({{"a", v}, {"b", Value(v.AsInt() * 0.5)}});
                             })
                             .Batch(2)
                             .Rebatch(3);
  std::vector<Value> out = Drain(*ds.MakeIterator());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(ArrayInts(out[0]["a"]), (Ints{0, 1, 2}));
  EXPECT_EQ(out[0]["b"].AsArray().dtype, DType::kFloat64);
  EXPECT_EQ(out[1]["b"].AsArray().shape, (std::vector<int64_t>{2}));
}

TEST(RebatchTest, RestoresAtEveryPosition) {
  CheckRestoreAtEveryPosition(RangeIter(10).Batch(3).Rebatch(4), "3 -> 4");
  CheckRestoreAtEveryPosition(RangeIter(11).Batch(5).Rebatch(2, true), "5 -> 2 drop");
  CheckRestoreAtEveryPosition(RangeIter(20, Threads(2, 8)).Batch(4).Rebatch(6), "threads");
}

TEST(RebatchTest, RejectsBadInput) {
  EXPECT_THROW(RangeIter(3).Batch(2).Rebatch(0), std::invalid_argument);
  auto scalars = RangeIter(3).Rebatch(2).MakeIterator();
  EXPECT_THROW(scalars->Next(), std::invalid_argument);
  auto it = RangeIter(3).Batch(2).Rebatch(2).MakeIterator();
  EXPECT_THROW(it->SetState(State{{"batch_idx", 0}}), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
