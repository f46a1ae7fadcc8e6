// Tests for Grain's get_next_index / set_next_index on engine iterators
// (DatasetIterator::NextIndexOf / StateAtIndex, spelt/node.h): each operation reads its next
// index from its own state, and moving to an index reads no element. Expected values are
// Grain 0.2.18's (its iterators' _get_next_index / _set_next_index).
#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

Value Plus100(Value v) { return Value(v.AsInt() + 100); }

TEST(NextIndexTest, PositionIsNextIndex) {
  for (const ReadOptions options : {Serial(), Threads(2, 4)}) {
    auto it = RangeIter(10, options).MakeIterator();
    EXPECT_EQ(it->GetNextIndex(), 0);
    it->Next();
    it->Next();
    EXPECT_EQ(it->GetNextIndex(), 2);
    it->SetNextIndex(7);
    EXPECT_EQ(it->GetState(), State({{"next_index", 7}}));
    EXPECT_EQ(it->Next()->AsInt(), 7);
    EXPECT_EQ(it->GetNextIndex(), 8);
    EXPECT_THROW(it->SetNextIndex(11), std::out_of_range);  // SetState checks the range
  }
}

TEST(NextIndexTest, BatchCountsBatches) {
  // Element-wise (a Python-like map below) and whole-batch read-ahead (threads, no map).
  for (const IterDataset& ds :
       {RangeIter(20).Map(Plus100).Batch(3), RangeIter(20, Threads(2, 6)).Batch(3)}) {
    auto it = ds.MakeIterator();
    it->Next();
    EXPECT_EQ(it->GetNextIndex(), 1);
    it->SetNextIndex(4);
    EXPECT_EQ(it->GetState(), State({{"next_index", 12}}));
    EXPECT_EQ(it->GetNextIndex(), 4);
    EXPECT_EQ(ArrayInts(*it->Next()).front() % 100, 12);
    it->SetState(State{{"next_index", 13}});
    EXPECT_EQ(it->GetNextIndex(), 5);  // rounded up: batch 4 is partly consumed
  }
  EXPECT_THROW(RangeIter(20).Batch(3).MakeIterator()->SetNextIndex(int64_t{1} << 62),
               std::out_of_range);
}

TEST(NextIndexTest, CountingOpsCountTheirElements) {
  auto limit = RangeIter(20).Limit(10).MakeIterator();
  limit->Next();
  EXPECT_EQ(limit->GetNextIndex(), 1);
  limit->SetNextIndex(4);
  EXPECT_EQ(limit->GetState(),
            (State{{"parent", {{"next_index", 4}}}, {"count_elements_read", 4}}));

  auto with_index = RangeIter(20).MapWithIndex([](int64_t i, Value) { return Value(i); });
  auto it = with_index.MakeIterator();
  it->SetNextIndex(5);
  EXPECT_EQ(it->GetState(), (State{{"parent", {{"next_index", 5}}}, {"counter", 5}}));
  EXPECT_EQ(it->Next()->AsInt(), 5);
  EXPECT_EQ(it->GetNextIndex(), 6);

  auto random = RangeIter(20).RandomMap(FirstRaw, AnySeed(uint64_t{3})).MakeIterator();
  random->SetNextIndex(2);
  EXPECT_EQ(random->GetState(), (State{{"parent", {{"next_index", 2}}}, {"index_for_rng", 2}}));
  EXPECT_EQ(random->GetNextIndex(), 2);
}

TEST(NextIndexTest, PassThroughOpsAnswerWithTheirParent) {
  auto it = RangeIter(20).Map(Plus100).ThreadPrefetch(2).Batch(2).MakeIterator();
  it->Next();
  EXPECT_EQ(it->GetNextIndex(), 1);  // read-ahead never counts
  it->SetNextIndex(3);
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{106, 107}));
  EXPECT_EQ(it->GetNextIndex(), 4);
}

TEST(NextIndexTest, InterleaveOfOneDatasetAsksIt) {
  IterDataset::InterleaveOptions options;
  options.cycle_length = 2;
  auto it = IterDataset::Interleave({RangeIter(10).Batch(2)}, options).MakeIterator();
  EXPECT_EQ(it->GetNextIndex(), 0);
  it->SetNextIndex(3);
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{6, 7}));
  EXPECT_EQ(it->GetNextIndex(), 4);
  auto two = IterDataset::Interleave({RangeIter(4), RangeIter(4)}, options).MakeIterator();
  EXPECT_THROW(two->GetNextIndex(), NextIndexUnsupported);
  EXPECT_THROW(two->SetNextIndex(1), NextIndexUnsupported);
}

TEST(NextIndexTest, OtherOpsCannotTell) {
  auto filtered = RangeIter(10).Filter([](const Value& v) { return v.AsInt() % 2 == 0; });
  EXPECT_THROW(filtered.MakeIterator()->GetNextIndex(), NextIndexUnsupported);
  EXPECT_THROW(filtered.MakeIterator()->SetNextIndex(2), NextIndexUnsupported);
  EXPECT_THROW(filtered.Batch(2).MakeIterator()->GetNextIndex(), NextIndexUnsupported);
  // As Grain's, a counting op answers from its own count whatever its parent.
  EXPECT_EQ(filtered.Limit(3).MakeIterator()->GetNextIndex(), 0);
  EXPECT_THROW(filtered.Limit(3).MakeIterator()->SetNextIndex(1), NextIndexUnsupported);
}

}  // namespace
}  // namespace spelt
