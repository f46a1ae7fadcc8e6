// Tests for IterDataset::Interleave, ThreadPrefetch and Cache (ops/interleave.cc,
// ops/thread_prefetch.cc, ops/cache.cc). Expected outputs and states are Grain 0.2.18's.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "spelt/dataset.h"
#include "spelt/thread_prefetch.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

IterDataset::InterleaveOptions Cycle(int64_t cycle_length, int64_t iter_buffer_size = 1) {
  IterDataset::InterleaveOptions options;
  options.cycle_length = cycle_length;
  options.iter_buffer_size = iter_buffer_size;
  return options;
}

// Datasets [100 i, 100 i + lengths[i]).
std::vector<IterDataset> Ranges(const Ints& lengths) {
  std::vector<IterDataset> out;
  for (size_t i = 0; i < lengths.size(); ++i) {
    out.push_back(MapDataset::Range(100 * i, 100 * i + lengths[i]).ToIter());
  }
  return out;
}

TEST(InterleaveTest, GrainsOrder) {
  EXPECT_EQ(DrainInts(*IterDataset::Interleave(Ranges({3, 1, 4, 0, 2}), Cycle(2)).MakeIterator()),
            (Ints{0, 100, 1, 2, 200, 201, 202, 400, 203, 401}));
  EXPECT_EQ(DrainInts(*IterDataset::Interleave(Ranges({2, 2}), Cycle(1)).MakeIterator()),
            (Ints{0, 1, 100, 101}));
  EXPECT_TRUE(DrainInts(*IterDataset::Interleave(Ranges({}), Cycle(3)).MakeIterator()).empty());
}

TEST(InterleaveTest, StateLayout) {
  auto it = IterDataset::Interleave(Ranges({1, 3}), Cycle(2, 0)).MakeIterator();
  EXPECT_EQ(AsInts(Drain(*it, 3)), (Ints{0, 100, 101}));
  EXPECT_EQ(it->GetState(),
            (State{{"next_index_in_cycle", 0},
                   {"next_index_in_datasets", 2},
                   {"iterators_in_use_indices", {0, 1}},
                   {"iterators_in_use_states", {{{"next_index", 1}}, {{"next_index", 2}}}},
                   {"exhausted", {1, 0}},
                   {"future_states", State::object()}}));
}

TEST(InterleaveTest, RestoresAtEveryPosition) {
  for (int64_t buffer : {0, 1, 3}) {
    CheckRestoreAtEveryPosition(IterDataset::Interleave(Ranges({3, 1, 4, 0, 5}), Cycle(3, buffer)),
                                "cycle 3");
  }
  IterDataset::InterleaveOptions sync = Cycle(2);
  sync.num_make_iter_threads = 0;
  CheckRestoreAtEveryPosition(IterDataset::Interleave(Ranges({2, 5, 1}), sync), "sync");
}

TEST(InterleaveTest, LazyDatasetsAndBadOptions) {
  std::atomic<int> made{0};
  auto ds = IterDataset::Interleave(
      3,
      [&made](int64_t i) {
        ++made;
        return MapDataset::Range(10 * i, 10 * i + 2).ToIter();
      },
      Cycle(2));
  EXPECT_EQ(made.load(), 0);
  EXPECT_EQ(DrainInts(*ds.MakeIterator()), (Ints{0, 10, 1, 11, 20, 21}));
  EXPECT_EQ(made.load(), 3);
  EXPECT_THROW(IterDataset::Interleave(Ranges({1}), Cycle(0)), std::invalid_argument);
  EXPECT_THROW(IterDataset::Interleave(Ranges({1}), Cycle(1, -1)), std::invalid_argument);
}

TEST(ThreadPrefetchTest, StateIsTheConsumedPosition) {
  for (int64_t buffer : {0, 1, 8}) {
    auto it = RangeIter(20).ThreadPrefetch(buffer).MakeIterator();
    EXPECT_EQ(AsInts(Drain(*it, 5)), (Ints{0, 1, 2, 3, 4}));
    EXPECT_EQ(it->GetState(), (State{{"next_index", 5}}));
    it->SetState(State{{"next_index", 15}});
    EXPECT_EQ(DrainInts(*it), (Ints{15, 16, 17, 18, 19}));
    EXPECT_EQ(it->GetState(), (State{{"next_index", 20}}));
    CheckRestoreAtEveryPosition(RangeIter(7).Batch(2).ThreadPrefetch(buffer), "prefetch");
  }
  EXPECT_THROW(RangeIter(2).ThreadPrefetch(-1), std::invalid_argument);
  EXPECT_THROW(MakeThreadPrefetchIterator(RangeIter(2).MakeIterator(), -1),
               std::invalid_argument);
}

TEST(CacheTest, EpochsReadTheCache) {
  auto it = RangeIter(4).Cache().Repeat(3).MakeIterator();
  EXPECT_EQ(DrainInts(*it), (Ints{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  CheckRestoreAtEveryPosition(RangeIter(5).Cache().Repeat(2), "cache repeat");
  auto fresh = RangeIter(4).Cache().MakeIterator();
  fresh->SetState(State{{"parent", {{"next_index", 4}}}, {"position", 2}, {"cache_filled", true}});
  EXPECT_EQ(DrainInts(*fresh), (Ints{2, 3}));
  EXPECT_THROW(fresh->SetState(State{{"parent", {{"next_index", 0}}}, {"position", 0}}),
               std::invalid_argument);
}

}  // namespace
}  // namespace spelt
