// Tests for MapDataset::WindowShuffle and IterDataset::WindowShuffle (ops/window_shuffle.cc).
// Expected outputs and states are Grain 0.2.18's for the same seeds.
#include <gtest/gtest.h>

#include <algorithm>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

TEST(WindowShuffleTest, MapMatchesGrainWhenWindowsDivideTheLength) {
  const MapDataset ds = MapDataset::Range(12).WindowShuffle(4, 0);
  EXPECT_EQ(ds.Length(), 12);
  EXPECT_EQ(GetInts(ds, 24), (Ints{0, 3, 1, 2, 5, 6, 7, 4, 8, 11, 9, 10,
                                   2, 3, 0, 1, 5, 4, 6, 7, 9, 8, 10, 11}));
}

TEST(WindowShuffleTest, MapLastWindowIsARemainderPermutation) {
  // Grain reads past the epoch here ([0, 3, 1, 2, 5, 6, 7, 4, 8, 1] for seed 0); every
  // epoch of Spelt's is a permutation of the parent's, window by window.
  const MapDataset ds = MapDataset::Range(10).WindowShuffle(4, 0);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    Ints got = GetInts(ds, 10, epoch * 10);
    for (int64_t w = 0; w < 3; ++w) {
      Ints window(got.begin() + w * 4, got.begin() + std::min<int64_t>(10, w * 4 + 4));
      std::sort(window.begin(), window.end());
      Ints want;
      for (int64_t i = w * 4; i < std::min<int64_t>(10, w * 4 + 4); ++i) want.push_back(i);
      EXPECT_EQ(window, want) << "epoch " << epoch << " window " << w;
    }
  }
  EXPECT_EQ(GetInts(ds, 8), (Ints{0, 3, 1, 2, 5, 6, 7, 4}));
}

TEST(WindowShuffleTest, IterMatchesGrainOutputsAndStates) {
  auto it = MapDataset::Range(10).ToIter(Serial()).WindowShuffle(4, 7).MakeIterator();
  const Ints first{1, 3, 0, 2, 6};
  const std::vector<State> states{
      {{"parent_window_start_state", {{"next_index", 0}}}, {"window_index", 0},
       {"pos_in_window", 1}},
      {{"parent_window_start_state", {{"next_index", 0}}}, {"window_index", 0},
       {"pos_in_window", 2}},
      {{"parent_window_start_state", {{"next_index", 0}}}, {"window_index", 0},
       {"pos_in_window", 3}},
      {{"parent_window_start_state", {{"next_index", 0}}}, {"window_index", 1},
       {"pos_in_window", 4}},
      {{"parent_window_start_state", {{"next_index", 4}}}, {"window_index", 1},
       {"pos_in_window", 1}},
  };
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(it->Next()->AsInt(), first[i]);
    EXPECT_EQ(it->GetState(), states[i]) << i;
  }
  Ints all = first;
  for (int64_t v : DrainInts(*it)) all.push_back(v);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (Ints{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(WindowShuffleTest, IterRestoresAtEveryPositionInFreshIterators) {
  CheckRestoreAtEveryPosition(MapDataset::Range(10).ToIter(Serial()).WindowShuffle(4, 7),
                              "partial last window");
  CheckRestoreAtEveryPosition(MapDataset::Range(12).ToIter(Threads(2, 4)).WindowShuffle(3, 1),
                              "exact windows");
  CheckRestoreAtEveryPosition(
      MapDataset::Range(9).ToIter(Serial()).WindowShuffle(20, 5), "one window");
}

TEST(WindowShuffleTest, SeedsWrapAroundAndArgumentsAreChecked) {
  // Grain raises TypeError once seed + window passes 2^32; Spelt wraps the window seed.
  // Window 1 of seed 2^32 - 1 is shuffled with seed 0, as window 0 of seed 0 is.
  const Ints wrapped = GetInts(MapDataset::Range(16).WindowShuffle(8, 4294967295), 8, 8);
  Ints zero = GetInts(MapDataset::Range(16).WindowShuffle(8, 0), 8);
  for (int64_t& v : zero) v += 8;
  EXPECT_EQ(wrapped, zero);
  EXPECT_THROW(MapDataset::Range(4).WindowShuffle(0, 1), std::invalid_argument);
  EXPECT_THROW(RangeIter(4).WindowShuffle(-1, 1), std::invalid_argument);
  EXPECT_THROW(RangeIter(4).WindowShuffle(2, -1), std::invalid_argument);
  auto it = RangeIter(4).WindowShuffle(2, 1).MakeIterator();
  EXPECT_THROW(it->SetState(State{{"window_index", 0}}), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
