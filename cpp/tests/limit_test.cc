// Tests for IterDataset::Limit (ops/limit.cc). Expected states are Grain 0.2.18's layout.
#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

TEST(LimitTest, TakesFirstCountElements) {
  auto it = RangeIter(10).Limit(3).MakeIterator();
  EXPECT_EQ(DrainInts(*it), (Ints{0, 1, 2}));
  EXPECT_EQ(it->GetState(), (State{{"parent", {{"next_index", 3}}}, {"count_elements_read", 3}}));
  EXPECT_EQ(DrainInts(*RangeIter(2).Limit(5).MakeIterator()), (Ints{0, 1}));
}

TEST(LimitTest, RestoresAtEveryPosition) {
  CheckRestoreAtEveryPosition(RangeIter(10).Limit(4), "limit 4 of 10");
  CheckRestoreAtEveryPosition(RangeIter(3).Limit(7), "limit 7 of 3");
  CheckRestoreAtEveryPosition(RangeIter(20, Threads(3, 6)).Filter([](const Value& v) {
                                return v.AsInt() % 3 != 0;
                              }).Limit(5),
                              "limit after filter");
}

TEST(LimitTest, RejectsNonPositiveCountAndBadState) {
  EXPECT_THROW(RangeIter(3).Limit(0), std::invalid_argument);
  auto it = RangeIter(3).Limit(2).MakeIterator();
  EXPECT_THROW(it->SetState(State{{"parent", {{"next_index", 0}}}}), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
