// Tests for MapDataset::Batch and IterDataset::Batch (ops/batch.cc). Expected values marked "Grain 0.2.18" were computed with
// Grain 0.2.18.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/random.h"
#include "spelt/sampler.h"
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


// Rows of an in-memory int64 array [10 x 2]: row i is {i, 10 * i}. With `gathers`, the source
// also stacks rows itself (RandomAccessSource::GetStacked), as the numpy source does.
class RowSource final : public RandomAccessSource {
 public:
  explicit RowSource(bool gathers, int64_t length = 10) : gathers_(gathers), length_(length) {}
  int64_t Length() const override { return length_; }
  Value Get(int64_t index) const override {
    if (index < 0 || index >= length_) throw std::out_of_range("row " + std::to_string(index));
    Array row = Array::AllocateUninitialized(DType::kInt64, {2});
    const int64_t values[2] = {index, 10 * index};
    std::memcpy(row.mutable_data(), values, sizeof(values));
    return Value(std::move(row));
  }
  std::optional<Value> GetStacked(std::span<const int64_t> indices) const override {
    if (!gathers_) return std::nullopt;
    ++gathered_;
    Array batch = Array::AllocateUninitialized(DType::kInt64, {int64_t(indices.size()), 2});
    auto* out = reinterpret_cast<int64_t*>(batch.mutable_data());
    for (const int64_t i : indices) {
      if (i < 0 || i >= length_) throw std::out_of_range("row " + std::to_string(i));
      *out++ = i;
      *out++ = 10 * i;
    }
    return Value(std::move(batch));
  }
  std::string Repr() const override { return "RowSource"; }
  mutable std::atomic<int> gathered_{0};

 private:
  bool gathers_;
  int64_t length_;
};

// A source that gathers batches itself gives BatchMapDataset the batches that stacking its
// rows gives, through index-mapping nodes (seed, shuffle, repeat, slice), by Get and by GetMany.
TEST(MapDatasetBatchTest, SourceGatheredBatchesEqualStackedRows) {
  const auto gathering = std::make_shared<RowSource>(true);
  const auto plain = std::make_shared<RowSource>(false);
  const auto pipeline = [](std::shared_ptr<RowSource> source) {
    return MapDataset::Source(source).Seed(4).Shuffle().Repeat(2).Slice(1, 19, 1).Batch(4);
  };
  const MapDataset fast = pipeline(gathering), slow = pipeline(plain);
  ASSERT_EQ(fast.Length(), slow.Length());
  for (int64_t i = 0; i < fast.Length() + 3; ++i) EXPECT_EQ(*fast.Get(i), *slow.Get(i)) << i;
  EXPECT_GT(gathering->gathered_.load(), 0);
  const std::vector<Value> fast_all = Drain(*fast.ToIter(Threads(2, 8)).MakeIterator());
  const std::vector<Value> slow_all = Drain(*slow.ToIter(Threads(2, 8)).MakeIterator());
  EXPECT_EQ(fast_all, slow_all);
  EXPECT_EQ(plain->gathered_.load(), 0);
}

// The DataLoader's first stage (SamplerDataset) hands a batch's record keys to a source that
// gathers, with and without read threads (to_iter_dataset().batch(n) computes whole batches
// either way): the batches of stacking its rows, each gathered once (the read-ahead deepens
// after the first batch without starting again).
TEST(MapDatasetBatchTest, SamplerDatasetBatchesAreGatheredByTheSource) {
  const auto gathering = std::make_shared<RowSource>(true);
  const auto plain = std::make_shared<RowSource>(false);
  const auto sampler =
      std::make_shared<IndexSampler>(10, ShardOptions{}, /*shuffle=*/true, 2, /*seed=*/3);
  for (const ReadOptions options : {Threads(2, 8), ReadOptions{0, 0}}) {
    const int before = gathering->gathered_.load();
    const std::vector<Value> fast =
        Drain(*SamplerDataset(sampler, gathering, {}).ToIter(options).Batch(4).MakeIterator());
    const std::vector<Value> slow =
        Drain(*SamplerDataset(sampler, plain, {}).ToIter(options).Batch(4).MakeIterator());
    EXPECT_EQ(fast, slow);
    EXPECT_EQ(fast.size(), 5u);
    const int gathered = gathering->gathered_.load() - before;
    EXPECT_EQ(gathered, 5);
  }
}

// Small batches are read ahead at least 4 MiB deep once the first is seen, whatever
// prefetch_buffer_size says (8 elements here: 2 batches of 4 rows of 16 bytes); the batches
// and states are those of a shallow read-ahead.
TEST(IterOpsTest, SmallBatchesAreReadAheadAtLeastFourMebibytesDeep) {
  const auto source = std::make_shared<RowSource>(true, 4000);
  const IterDataset batched = MapDataset::Source(source).ToIter(Threads(2, 8)).Batch(4);
  auto it = batched.MakeIterator();
  ASSERT_TRUE(it->Next().has_value());
  ASSERT_TRUE(it->Next().has_value());
  // The read-ahead threads gather the other 998 batches without further next() calls.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (source->gathered_.load() < 500 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(source->gathered_.load(), 500);
  EXPECT_EQ(it->GetState(), State({{"next_index", 8}}));
  const auto plain = std::make_shared<RowSource>(false, 4000);
  auto expected = MapDataset::Source(plain).ToIter(ReadOptions{0, 0}).Batch(4).MakeIterator();
  expected->SetState(it->GetState());
  for (int i = 0; i < 998; ++i) ASSERT_EQ(*it->Next(), *expected->Next()) << i;
  EXPECT_FALSE(it->Next().has_value());
}

// to_iter_dataset().batch(n) with read-ahead threads computes whole batches on the threads
// (ops/batched_read_ahead.cc): the same batches, states and restores as batching element by
// element in the calling thread, from any restored position (also one between batches), for
// finite and infinite parents.
TEST(IterOpsTest, BatchOverThreadedReadAheadEqualsElementwise) {
  for (const int64_t length : {int64_t{0}, int64_t{1}, int64_t{10}, int64_t{37}}) {
    const MapDataset ds = MapDataset::Range(length).Seed(5).Shuffle();
    for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{10}, int64_t{64}}) {
      for (const bool drop : {false, true}) {
        const std::string what = std::to_string(length) + "/" + std::to_string(n) + "/" +
                                 std::to_string(drop);
        const IterDataset expected_ds = ds.ToIter(Serial()).Batch(n, drop);
        for (const ReadOptions& o : {Threads(1, 1), Threads(2, 7), Threads(4, 500)}) {
          const IterDataset batched = ds.ToIter(o).Batch(n, drop);
          for (const int64_t start : {int64_t{0}, length / 2, length}) {
            auto expected = expected_ds.MakeIterator();
            auto it = batched.MakeIterator();
            const State at{{"next_index", start}};
            expected->SetState(at);
            it->SetState(at);
            for (;;) {
              std::optional<Value> want = expected->Next(), got = it->Next();
              ASSERT_EQ(got.has_value(), want.has_value()) << what << " from " << start;
              ASSERT_EQ(it->GetState(), expected->GetState()) << what << " from " << start;
              if (!want) break;
              ASSERT_EQ(*got, *want) << what << " from " << start;
            }
          }
          if (length > 0 && !(drop && n > length)) CheckRestoreAtEveryPosition(batched, what);
        }
      }
    }
  }
  const IterDataset infinite = MapDataset::Range(7).Repeat().ToIter(Threads(2, 50)).Batch(4);
  auto it = infinite.MakeIterator();
  it->SetState(State{{"next_index", 5}});
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{5, 6, 0, 1}));
  EXPECT_EQ(it->GetState(), State({{"next_index", 9}}));
}

// An element that fails inside a batch computed by the read-ahead threads raises at the same
// next() as element-wise batching, with the same state after it, and the stream goes on alike.
TEST(IterOpsTest, BatchOverThreadedReadAheadRaisesLikeElementwise) {
  const MapDataset ds = MapDataset::Range(30).Map([](Value v) {
    if (v.AsInt() == 13) throw std::runtime_error("bad element 13");
    return v;
  });
  auto expected = ds.ToIter(Serial()).Batch(4).MakeIterator();
  auto it = ds.ToIter(Threads(2, 16)).Batch(4).MakeIterator();
  for (int call = 0; call < 12; ++call) {
    std::optional<Value> want, got;
    std::string want_error, got_error;
    try {
      want = expected->Next();
    } catch (const std::runtime_error& e) {
      want_error = e.what();
    }
    try {
      got = it->Next();
    } catch (const std::runtime_error& e) {
      got_error = e.what();
    }
    EXPECT_EQ(got_error, want_error) << "call " << call;
    EXPECT_EQ(got, want) << "call " << call;
    EXPECT_EQ(it->GetState(), expected->GetState()) << "call " << call;
  }
}

// MapInto (spelt/node.h): a MapDataset batch is filled by the maps' writers, element 0 by the
// function; the batches equal Stack() of the elements.
Value Pair(int64_t i) {
  Array a = Array::Allocate(DType::kInt64, {2});
  auto* p = reinterpret_cast<int64_t*>(a.mutable_data());
  p[0] = i;
  p[1] = i * i;
  return Value(std::move(a));
}

MapInto PairInto(std::atomic<int>* writes) {
  return {[writes](int64_t i, const Value&, Philox*, const Array& slot) {
            ++*writes;
            const Value v = Pair(i);
            std::memcpy(slot.mutable_data(), v.AsArray().data, slot.nbytes());
            return true;
          },
          false};
}

TEST(MapDatasetBatchTest, MapsWithAWriterFillTheBatchInPlace) {
  std::atomic<int> writes = 0, negations = 0;
  const MapDataset pairs =
      MapDataset::Range(10).MapWithIndex([](int64_t i, Value) { return Pair(i); }, false,
                                         PairInto(&writes));
  // An in-place map after it: negates the slot where it is.
  MapInto negate{[&negations](int64_t, const Value& v, Philox*, const Array& slot) {
                   ++negations;
                   const Array& in = v.AsArray();
                   for (int k = 0; k < 2; ++k) {
                     reinterpret_cast<int64_t*>(slot.mutable_data())[k] =
                         -reinterpret_cast<const int64_t*>(in.data)[k];
                   }
                   return true;
                 },
                 true};
  const MapDataset negated = pairs.RandomMap(
      [](Value v, Philox&) {
        Array out = Array::Allocate(DType::kInt64, {2});
        for (int k = 0; k < 2; ++k) {
          reinterpret_cast<int64_t*>(out.mutable_data())[k] =
              -reinterpret_cast<const int64_t*>(v.AsArray().data)[k];
        }
        return Value(std::move(out));
      },
      AnySeed(uint64_t{1}), false, negate);
  for (const auto& [ds, sign] : {std::pair{pairs, 1}, std::pair{negated, -1}}) {
    const MapDataset batches = ds.Batch(4);
    for (int64_t b = 0; b < batches.Length(); ++b) {
      const Array got = batches.Get(b)->AsArray();
      const int64_t n = std::min<int64_t>(4, 10 - 4 * b);
      ASSERT_EQ(got.shape, (std::vector<int64_t>{n, 2}));
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = 4 * b + k;
        EXPECT_EQ(reinterpret_cast<const int64_t*>(got.data)[2 * k], sign * i);
        EXPECT_EQ(reinterpret_cast<const int64_t*>(got.data)[2 * k + 1], sign * i * i);
      }
    }
  }
  // Elements 1.. of each batch (3 + 3 + 1) went through the writers, twice for `pairs`.
  EXPECT_EQ(writes.load(), 14);
  EXPECT_EQ(negations.load(), 7);
}

TEST(MapDatasetBatchTest, AWriterIsNotUsedAfterOutputsThatDoNotStack) {
  std::atomic<int> writes = 0;
  // Element 2's output has another shape: the batch falls back to Stack(), which raises.
  const MapDataset ragged = MapDataset::Range(4).MapWithIndex(
      [](int64_t i, Value) {
        return i == 2 ? Value(Array::Allocate(DType::kInt64, {3})) : Pair(i);
      },
      false, {[&writes](int64_t i, const Value&, Philox*, const Array&) {
                ++writes;
                return i != 2;
              },
              false});
  EXPECT_THROW(ragged.Batch(4).Get(0), std::invalid_argument);
  // Scalars are not arrays: Stack() makes the batch, the writer is never called.
  std::atomic<int> scalar_writes = 0;
  const MapDataset ints = MapDataset::Range(4).MapWithIndex(
      [](int64_t i, Value) { return Value(i); }, false, PairInto(&scalar_writes));
  EXPECT_EQ(ArrayInts(*ints.Batch(4).Get(0)), (Ints{0, 1, 2, 3}));
  EXPECT_EQ(scalar_writes.load(), 0);
  // A map that calls Python never writes into a batch.
  std::atomic<int> python_writes = 0;
  const MapDataset python = MapDataset::Range(4).MapWithIndex(
      [](int64_t i, Value) { return Pair(i); }, /*calls_python=*/true, PairInto(&python_writes));
  EXPECT_EQ(python.Batch(4).Get(0)->AsArray().shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(python_writes.load(), 0);
}

}  // namespace
}  // namespace spelt
