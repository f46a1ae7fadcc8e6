// Tests for IterDataset::Interleave, ThreadPrefetch and Cache (ops/interleave.cc,
// ops/thread_prefetch.cc, ops/cache.cc). Expected outputs and states are Grain 0.2.18's.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

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

// A parent that counts to `n`, records the thread of each Next() and answers
// AbsorbReadAhead with `absorbs`.
class RecordingIterator final : public DatasetIterator {
 public:
  RecordingIterator(int64_t n, bool absorbs) : n_(n), absorbs_(absorbs) {}
  std::optional<Value> Next() override {
    threads.push_back(std::this_thread::get_id());
    if (next_ == n_) return std::nullopt;
    return Value(next_++);
  }
  State GetState() const override { return State{{"next_index", next_}}; }
  void SetState(const State& state) override { next_ = state["next_index"].get<int64_t>(); }
  bool AbsorbReadAhead(int64_t elements) override {
    absorbed += elements;
    return absorbs_;
  }
  std::vector<std::thread::id> threads;
  int64_t absorbed = 0;

 private:
  const int64_t n_;
  const bool absorbs_;
  int64_t next_ = 0;
};

TEST(ThreadPrefetchTest, NoThreadOverAParentThatReadsTheBufferAhead) {
  for (bool absorbs : {false, true}) {
    auto parent = std::make_unique<RecordingIterator>(6, absorbs);
    RecordingIterator* recorded = parent.get();
    auto it = MakeThreadPrefetchIterator(std::move(parent), 3);
    EXPECT_EQ(AsInts(Drain(*it, 2)), (Ints{0, 1})) << absorbs;
    EXPECT_EQ(it->GetState(), (State{{"next_index", 2}})) << absorbs;
    it->SetState(State{{"next_index", 4}});
    EXPECT_EQ(DrainInts(*it), (Ints{4, 5})) << absorbs;
    // Asked for the buffer size at each start of the read-ahead until the parent takes it.
    EXPECT_EQ(recorded->absorbed, absorbs ? 3 : 6) << absorbs;
    const auto on_caller = std::count(recorded->threads.begin(), recorded->threads.end(),
                                      std::this_thread::get_id());
    EXPECT_EQ(on_caller, absorbs ? static_cast<int64_t>(recorded->threads.size()) : 0)
        << absorbs;
  }
}

// to_iter_dataset().batch() read ahead by the pool takes the thread prefetch's buffer on, and
// reads ahead the same batches with the same states; without threads it does not.
TEST(ThreadPrefetchTest, PoolBatchesAbsorbTheBuffer) {
  const IterDataset pooled = RangeIter(50, Threads(4, 16)).Batch(4);
  EXPECT_TRUE(pooled.MakeIterator()->AbsorbReadAhead(8));
  EXPECT_FALSE(RangeIter(50).Batch(4).MakeIterator()->AbsorbReadAhead(8));
  EXPECT_FALSE(RangeIter(50, Threads(4, 16)).MakeIterator()->AbsorbReadAhead(8));
  EXPECT_EQ(Drain(*pooled.ThreadPrefetch(8).MakeIterator()), Drain(*pooled.MakeIterator()));
  CheckRestoreAtEveryPosition(pooled.ThreadPrefetch(8), "pool batches");
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
