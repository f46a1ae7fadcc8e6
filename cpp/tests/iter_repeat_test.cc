// Tests for IterDataset::Repeat (ops/iter_repeat.cc). Expected states are Grain 0.2.18's layout.
#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

TEST(IterRepeatTest, RepeatsIdenticalEpochs) {
  auto it = MapDataset::Range(4).Shuffle(3).ToIter().Repeat(3).MakeIterator();
  const Ints out = DrainInts(*it);
  ASSERT_EQ(out.size(), 12u);
  EXPECT_EQ(Ints(out.begin(), out.begin() + 4), Ints(out.begin() + 4, out.begin() + 8));
  EXPECT_EQ(it->GetState(), (State{{"parent", {{"next_index", 4}}}, {"epoch", 3}}));
}

TEST(IterRepeatTest, ForeverAndEmpty) {
  auto it = RangeIter(2).Repeat().MakeIterator();
  EXPECT_EQ(AsInts(Drain(*it, 7)), (Ints{0, 1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(it->GetState(), (State{{"parent", {{"next_index", 1}}}, {"epoch", 3}}));
  EXPECT_TRUE(Drain(*RangeIter(0).Repeat().MakeIterator()).empty());
}

TEST(IterRepeatTest, RestoresAtEveryPosition) {
  CheckRestoreAtEveryPosition(RangeIter(5).Repeat(3), "repeat 3");
  CheckRestoreAtEveryPosition(RangeIter(7).Batch(3).Repeat(2), "batch then repeat");
  CheckRestoreAtEveryPosition(RangeIter(3).Repeat(2).Repeat(2), "nested repeat");
}

TEST(IterRepeatTest, RejectsNonPositiveEpochs) {
  EXPECT_THROW(RangeIter(3).Repeat(0), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
