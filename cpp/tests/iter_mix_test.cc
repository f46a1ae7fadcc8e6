// Tests for IterDataset::Mix (ops/iter_mix.cc). Expected outputs: Grain 0.2.18's
// MixedIterDataset for the same pipelines.
#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

IterDataset From(int64_t start, int64_t n) { return MapDataset::Range(start, start + n).ToIter(); }

TEST(IterMixTest, FollowsMapMixSelectionAndStopsAtFirstExhausted) {
  // Grain 0.2.18: mix([range(0,3), range(10,20)], [1, 2]) -> 0 10 11 1 12 13 2 14 15 (stop)
  auto it = IterDataset::Mix({From(0, 3), From(10, 10)}, std::vector<double>{1, 2}).MakeIterator();
  EXPECT_EQ(DrainInts(*it), (Ints{0, 10, 11, 1, 12, 13, 2, 14, 15}));
  EXPECT_EQ(it->GetState()["stop"], true);
  EXPECT_EQ(it->GetState()["index"], 10);
  EXPECT_FALSE(it->Next().has_value());
}

TEST(IterMixTest, KeyedParentsStateIsAnObject) {
  auto it = IterDataset::Mix({From(0, 4), From(10, 4)}, std::nullopt, {"a", "b"}).MakeIterator();
  it->Next();
  EXPECT_EQ(it->GetState(), (State{{"parents", {{"a", {{"next_index", 1}}},
                                                {"b", {{"next_index", 0}}}}},
                                   {"index", 1},
                                   {"stop", false}}));
}

TEST(IterMixTest, RestoresAtEveryPosition) {
  CheckRestoreAtEveryPosition(IterDataset::Mix({From(0, 5), From(10, 9)}), "uniform");
  CheckRestoreAtEveryPosition(IterDataset::Mix({From(0, 5), From(10, 9)}, std::vector<double>{0.3, 0.7},
                                               {"x", "y"}),
                              "weighted, keyed");
}

TEST(IterMixTest, RejectsBadArguments) {
  EXPECT_THROW(IterDataset::Mix({}), std::invalid_argument);
  EXPECT_THROW(IterDataset::Mix({From(0, 2)}, std::vector<double>{0}), std::invalid_argument);
  EXPECT_THROW(IterDataset::Mix({From(0, 2)}, std::nullopt, {"a", "b"}), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
