// Tests for IterDataset transformations (spelt/dataset.h): Map, Filter, Batch, RandomMap,
// MapWithIndex, FlatMap and Seed, their Grain-layout states, and checkpoint/restore at every
// position of pipelines that use each of them. Values marked "Grain 0.2.18" were computed with
// Grain 0.2.18 (to_iter_dataset(ReadOptions(num_threads=0, prefetch_buffer_size=0)) and
// grain.experimental.FlatMapIterDataset).
#include <cstdint>
#include <cstring>
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
#include "spelt/value.h"

namespace spelt {
namespace {

using Ints = std::vector<int64_t>;

std::vector<Value> Drain(DatasetIterator& it, size_t limit = 100000) {
  std::vector<Value> out;
  while (out.size() < limit) {
    std::optional<Value> v = it.Next();
    if (!v) break;
    out.push_back(std::move(*v));
  }
  return out;
}

Ints AsInts(const std::vector<Value>& vs) {
  Ints out;
  for (const Value& v : vs) out.push_back(v.AsInt());
  return out;
}

Ints ArrayInts(const Value& v) {
  const Array& a = v.AsArray();
  EXPECT_EQ(a.dtype, DType::kInt64);
  Ints out(static_cast<size_t>(a.num_elements()));
  if (!out.empty()) std::memcpy(out.data(), a.data, a.nbytes());
  return out;
}

ReadOptions Serial() { return ReadOptions{0, 0}; }
ReadOptions Threads(int64_t n, int64_t buffer) { return ReadOptions{n, buffer}; }

IterDataset RangeIter(int64_t n, ReadOptions o = Serial()) {
  return MapDataset::Range(n).ToIter(o);
}

Value FirstRaw(Value, Philox& rng) { return Value(static_cast<int64_t>(rng.NextUint64())); }

// x -> [10x, 10x+1, ...] with x % 3 elements (0, 1 or 2 outputs).
std::vector<Value> SplitByMod3(Value v) {
  std::vector<Value> out;
  const int64_t x = v.AsInt();
  for (int64_t j = 0; j < x % 3; ++j) out.push_back(Value(x * 10 + j));
  return out;
}

// Checkpoints after every k elements, restores into a fresh iterator and checks that it
// yields exactly the remainder; also checks a checkpoint taken at the end of the stream.
void CheckRestoreAtEveryPosition(const IterDataset& ds, const std::string& what) {
  auto ref = ds.MakeIterator();
  const std::vector<Value> expected = Drain(*ref);
  ASSERT_FALSE(expected.empty()) << what;
  for (size_t k = 0; k <= expected.size(); ++k) {
    auto it = ds.MakeIterator();
    for (size_t i = 0; i < k; ++i) {
      std::optional<Value> v = it->Next();
      ASSERT_TRUE(v.has_value()) << what << " k=" << k;
      ASSERT_EQ(*v, expected[i]) << what << " k=" << k << " i=" << i;
    }
    const State state = it->GetState();
    auto restored = ds.MakeIterator();
    restored->SetState(state);
    const State restored_state = restored->GetState();
    const std::vector<Value> rest = Drain(*restored);
    // The restored iterator reports the same state, except at the end of the stream, where
    // (as in Grain) a flat_map forgets the index into a buffer it can no longer re-read.
    if (!rest.empty()) {
      EXPECT_EQ(restored_state, state) << what << " k=" << k;
    }
    ASSERT_EQ(rest.size(), expected.size() - k) << what << " k=" << k << " state " << state;
    for (size_t i = 0; i < rest.size(); ++i) {
      ASSERT_EQ(rest[i], expected[k + i]) << what << " k=" << k << " i=" << i;
    }
    // Restoring into an iterator that is already mid-stream works as well.
    auto reused = ds.MakeIterator();
    reused->Next();
    reused->Next();
    reused->SetState(state);
    ASSERT_EQ(Drain(*reused).size(), rest.size()) << what << " k=" << k;
  }
  // State at the end of the stream restores to an exhausted iterator.
  const State end_state = ref->GetState();
  auto at_end = ds.MakeIterator();
  at_end->SetState(end_state);
  EXPECT_FALSE(at_end->Next().has_value()) << what << " end state " << end_state;
  EXPECT_FALSE(at_end->Next().has_value()) << what;
}

// ---------------------------------------------------------------------------------------
// Map / Filter
// ---------------------------------------------------------------------------------------

TEST(IterOpsTest, MapAppliesFunctionAndPassesStateThrough) {
  auto it = RangeIter(5).Map([](Value v) { return Value(v.AsInt() * 3); }).MakeIterator();
  EXPECT_EQ(it->Next()->AsInt(), 0);
  EXPECT_EQ(it->Next()->AsInt(), 3);
  EXPECT_EQ(it->GetState(), State({{"next_index", 2}}));
  EXPECT_EQ(AsInts(Drain(*it)), (Ints{6, 9, 12}));
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
}

TEST(IterOpsTest, FilterKeepsMatchingAndPassesStateThrough) {
  auto it = RangeIter(10).Filter([](const Value& v) { return v.AsInt() % 4 == 1; }).MakeIterator();
  EXPECT_EQ(it->Next()->AsInt(), 1);
  EXPECT_EQ(it->GetState(), State({{"next_index", 2}}));
  EXPECT_EQ(it->Next()->AsInt(), 5);
  EXPECT_EQ(it->GetState(), State({{"next_index", 6}}));
  EXPECT_EQ(it->Next()->AsInt(), 9);
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_EQ(it->GetState(), State({{"next_index", 10}}));
}

TEST(IterOpsTest, EmptyFunctionsThrow) {
  IterDataset ds = RangeIter(3);
  EXPECT_THROW(ds.Map(MapFn{}), std::invalid_argument);
  EXPECT_THROW(ds.Filter(FilterFn{}), std::invalid_argument);
  EXPECT_THROW(ds.MapWithIndex(MapWithIndexFn{}), std::invalid_argument);
  EXPECT_THROW(ds.RandomMap(RandomMapFn{}, 1), std::invalid_argument);
  EXPECT_THROW(ds.FlatMap(FlatMapFn{}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Batch
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// RandomMap
// ---------------------------------------------------------------------------------------

TEST(IterOpsTest, RandomMapMatchesGrainAndHasIndexForRngState) {
  // Grain 0.2.18: range(10).to_iter_dataset().random_map(
  //     lambda x, rng: rng.bit_generator.random_raw(), seed=123): first three outputs, state
  // {"parent": {"next_index": 3}, "index_for_rng": 3}.
  auto it = RangeIter(10).RandomMap(FirstRaw, 123).MakeIterator();
  EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", 0}}}, {"index_for_rng", 0}}));
  EXPECT_EQ(it->Next()->AsInt(), static_cast<int64_t>(16603480961932373349ULL));
  EXPECT_EQ(it->Next()->AsInt(), static_cast<int64_t>(6074937422298438193ULL));
  EXPECT_EQ(it->Next()->AsInt(), static_cast<int64_t>(11669616918904608167ULL));
  EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", 3}}}, {"index_for_rng", 3}}));
}

TEST(IterOpsTest, RandomMapCounterCountsElementsNotIndices) {
  // Grain 0.2.18: range(10).to_iter_dataset().filter(lambda x: x % 2 == 1).random_map(
  //     lambda x, rng: (x, rng.bit_generator.random_raw()), seed=123): the rng index is the
  // element count (0, 1, 2), not the source index; state {"parent": {"next_index": 6},
  // "index_for_rng": 3}.
  auto it = RangeIter(10)
                .Filter([](const Value& v) { return v.AsInt() % 2 == 1; })
                .RandomMap(
                    [](Value v, Philox& rng) {
                      return Value::Tuple({v, Value(static_cast<int64_t>(rng.NextUint64()))});
                    },
                    123)
                .MakeIterator();
  auto pair = [](int64_t x, uint64_t raw) {
    return Value::Tuple({Value(x), Value(static_cast<int64_t>(raw))});
  };
  EXPECT_EQ(*it->Next(), pair(1, 16603480961932373349ULL));
  EXPECT_EQ(*it->Next(), pair(3, 6074937422298438193ULL));
  EXPECT_EQ(*it->Next(), pair(5, 11669616918904608167ULL));
  EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", 6}}}, {"index_for_rng", 3}}));
}

TEST(IterOpsTest, RandomMapDefaultSeedsMatchGrain) {
  // Grain 0.2.18: range(10).to_iter_dataset().seed(42).random_map(raw): seed at depth 1.
  auto a = RangeIter(10).Seed(42).RandomMap(FirstRaw).MakeIterator();
  EXPECT_EQ(a->Next()->AsInt(), static_cast<int64_t>(8235517490835174605ULL));
  EXPECT_EQ(a->Next()->AsInt(), static_cast<int64_t>(12477861298032462331ULL));
  // Grain 0.2.18: range(10).seed(42).to_iter_dataset().random_map(raw): seed at depth 2.
  auto b = MapDataset::Range(10).Seed(42).ToIter(Serial()).RandomMap(FirstRaw).MakeIterator();
  EXPECT_EQ(b->Next()->AsInt(), static_cast<int64_t>(10420873452419933373ULL));
  EXPECT_EQ(b->Next()->AsInt(), static_cast<int64_t>(989466761693038438ULL));
}

TEST(IterOpsTest, RandomMapWithoutSeedThrows) {
  EXPECT_THROW(RangeIter(5).RandomMap(FirstRaw), std::invalid_argument);
  EXPECT_THROW(RangeIter(5).RandomMap(FirstRaw, int64_t{1} << 32), std::invalid_argument);
  EXPECT_THROW(RangeIter(5).Seed(-3), std::invalid_argument);
}

TEST(IterOpsTest, RandomMapRestoredDrawsAreIdentical) {
  IterDataset ds = RangeIter(20).RandomMap(FirstRaw, 9);
  auto it = ds.MakeIterator();
  std::vector<Value> all = Drain(*it);
  std::set<int64_t> unique;
  for (const Value& v : all) unique.insert(v.AsInt());
  EXPECT_EQ(unique.size(), 20u);
  auto restored = ds.MakeIterator();
  restored->SetState(State{{"parent", {{"next_index", 12}}}, {"index_for_rng", 12}});
  EXPECT_EQ(*restored->Next(), all[12]);
}

// ---------------------------------------------------------------------------------------
// MapWithIndex
// ---------------------------------------------------------------------------------------

TEST(IterOpsTest, MapWithIndexCountsElementsAndHasCounterState) {
  // Grain 0.2.18: range(6).to_iter_dataset().map_with_index(lambda i, x: (i, x)) gives
  // (0, 0), (1, 1), (2, 2), state {"parent": {"next_index": 3}, "counter": 3}.
  auto it = RangeIter(6).MapWithIndex([](int64_t i, Value v) {
                          return Value::Tuple({Value(i), v});
                        }).MakeIterator();
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(*it->Next(), Value::Tuple({Value(i), Value(i)}));
  EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", 3}}}, {"counter", 3}}));
  // The index counts elements the iterator saw, after an upstream filter.
  auto filtered = RangeIter(10)
                      .Filter([](const Value& v) { return v.AsInt() >= 5; })
                      .MapWithIndex([](int64_t i, Value v) { return Value(i * 100 + v.AsInt()); })
                      .MakeIterator();
  EXPECT_EQ(AsInts(Drain(*filtered)), (Ints{5, 106, 207, 308, 409}));
  EXPECT_EQ(filtered->GetState(), State({{"parent", {{"next_index", 10}}}, {"counter", 5}}));
}

// ---------------------------------------------------------------------------------------
// FlatMap
// ---------------------------------------------------------------------------------------

TEST(IterOpsTest, FlatMapValuesAndStatesMatchGrain) {
  // Grain 0.2.18: FlatMapIterDataset(range(6).to_iter_dataset(), x -> [10x + j for j in
  // range(x % 3)]): (element, state) after each next().
  auto it = RangeIter(6).FlatMap(SplitByMod3).MakeIterator();
  EXPECT_EQ(it->GetState(),
            State({{"parent", {{"next_index", 0}}}, {"next_index_in_buffer", 0}}));
  const int64_t kValues[] = {10, 20, 21, 40, 50, 51};
  const int64_t kParent[] = {1, 2, 2, 4, 5, 5};
  const int64_t kInBuffer[] = {1, 1, 2, 1, 1, 2};
  for (int i = 0; i < 6; ++i) {
    std::optional<Value> v = it->Next();
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->AsInt(), kValues[i]);
    EXPECT_EQ(it->GetState(), State({{"parent", {{"next_index", kParent[i]}}},
                                     {"next_index_in_buffer", kInBuffer[i]}}))
        << "after " << i;
  }
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
}

TEST(IterOpsTest, FlatMapRestoreMidBuffer) {
  // Restoring {"parent": state before element 5, "next_index_in_buffer": 1} re-reads 5 and
  // skips its first output (50); 6 has no outputs and 7 has one.
  auto it = RangeIter(8).FlatMap(SplitByMod3).MakeIterator();
  it->SetState(State{{"parent", {{"next_index", 5}}}, {"next_index_in_buffer", 1}});
  EXPECT_EQ(it->GetState(),
            State({{"parent", {{"next_index", 5}}}, {"next_index_in_buffer", 1}}));
  EXPECT_EQ(AsInts(Drain(*it)), (Ints{51, 70}));
}

TEST(IterOpsTest, FlatMapAllEmptySplits) {
  auto it = RangeIter(20).FlatMap([](Value) { return std::vector<Value>{}; }).MakeIterator();
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
}

TEST(IterOpsTest, FlatMapCheckpointAtEveryPosition) {
  // Fan-outs of 0..4 elements, so checkpoints land at every position inside buffers.
  auto fan = [](Value v) {
    std::vector<Value> out;
    const int64_t x = v.AsInt();
    for (int64_t j = 0; j < (x * 7) % 5; ++j) out.push_back(Value(x * 100 + j));
    return out;
  };
  CheckRestoreAtEveryPosition(RangeIter(25).FlatMap(fan), "flat_map");
  CheckRestoreAtEveryPosition(
      MapDataset::Range(25).Seed(1).Shuffle().ToIter(Threads(4, 8)).FlatMap(fan).Batch(3),
      "flat_map+batch threads");
}

// ---------------------------------------------------------------------------------------
// Seed
// ---------------------------------------------------------------------------------------

TEST(IterOpsTest, SeedIsAPassThrough) {
  auto it = RangeIter(4).Seed(7).MakeIterator();
  EXPECT_EQ(it->Next()->AsInt(), 0);
  EXPECT_EQ(it->GetState(), State({{"next_index", 1}}));
  EXPECT_EQ(AsInts(Drain(*it)), (Ints{1, 2, 3}));
}

// ---------------------------------------------------------------------------------------
// Malformed states
// ---------------------------------------------------------------------------------------

TEST(IterOpsTest, MalformedStatesThrowInvalidArgument) {
  auto rm = RangeIter(10).RandomMap(FirstRaw, 1).MakeIterator();
  EXPECT_THROW(rm->SetState(State{{"parent", {{"next_index", 2}}}}), std::invalid_argument);
  EXPECT_THROW(rm->SetState(State{{"index_for_rng", 2}}), std::invalid_argument);
  EXPECT_THROW(rm->SetState(State{{"parent", {{"next_index", 2}}}, {"index_for_rng", "2"}}),
               std::invalid_argument);
  EXPECT_THROW(rm->SetState(State{{"parent", {{"next_index", 99}}}, {"index_for_rng", 2}}),
               std::invalid_argument);
  EXPECT_THROW(rm->SetState(State{{"next_index", 2}}), std::invalid_argument);

  auto mwi = RangeIter(10).MapWithIndex([](int64_t, Value v) { return v; }).MakeIterator();
  EXPECT_THROW(mwi->SetState(State{{"parent", {{"next_index", 2}}}}), std::invalid_argument);
  EXPECT_THROW(mwi->SetState(State{{"counter", 2}}), std::invalid_argument);
  EXPECT_THROW(mwi->SetState(State::array()), std::invalid_argument);

  auto fm = RangeIter(10).FlatMap(SplitByMod3).MakeIterator();
  EXPECT_THROW(fm->SetState(State{{"parent", {{"next_index", 2}}}}), std::invalid_argument);
  EXPECT_THROW(fm->SetState(State{{"next_index_in_buffer", 0}}), std::invalid_argument);
  EXPECT_THROW(fm->SetState(State{{"parent", {{"next_index", 2}}}, {"next_index_in_buffer", -1}}),
               std::invalid_argument);
  EXPECT_THROW(fm->SetState(State{{"parent", {{"next_index", 2}}}, {"next_index_in_buffer", 0.5}}),
               std::invalid_argument);

  auto mapped = RangeIter(10).Map([](Value v) { return v; }).Batch(2).MakeIterator();
  EXPECT_THROW(mapped->SetState(State::object()), std::invalid_argument);
  EXPECT_THROW(mapped->SetState(State{{"next_index", true}}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Checkpoint / restore at every position, for a pipeline using each op
// ---------------------------------------------------------------------------------------

TEST(IterOpsTest, CheckpointAtEveryPositionForEachOp) {
  auto make = [](ReadOptions o) {
    return MapDataset::Range(40).Seed(3).Shuffle().ToIter(o);
  };
  auto keep = [](const Value& v) { return v.AsInt() % 5 != 2; };
  auto add_rand = [](Value v, Philox& rng) {
    return Value(v.AsInt() * 1000 + static_cast<int64_t>(rng.NextUint64() % 1000));
  };
  // Each op alone, reading in the calling thread.
  const ReadOptions o = Serial();
  CheckRestoreAtEveryPosition(make(o).Map([](Value v) { return Value(v.AsInt() + 1); }), "map");
  CheckRestoreAtEveryPosition(make(o).Filter(keep), "filter");
  CheckRestoreAtEveryPosition(make(o).Batch(3), "batch");
  CheckRestoreAtEveryPosition(make(o).Batch(3, true), "batch drop_remainder");
  CheckRestoreAtEveryPosition(make(o).RandomMap(add_rand, 5), "random_map");
  CheckRestoreAtEveryPosition(make(o).Seed(8).RandomMap(add_rand), "seed+random_map");
  CheckRestoreAtEveryPosition(
      make(o).MapWithIndex([](int64_t i, Value v) { return Value(i * 1000 + v.AsInt()); }),
      "map_with_index");
  CheckRestoreAtEveryPosition(make(o).FlatMap(SplitByMod3), "flat_map");
  // Everything together, serial and with read-ahead threads.
  for (ReadOptions all_o : {Serial(), Threads(4, 6)}) {
    CheckRestoreAtEveryPosition(make(all_o)
                                    .Filter(keep)
                                    .FlatMap(SplitByMod3)
                                    .RandomMap(add_rand, 11)
                                    .MapWithIndex([](int64_t i, Value v) {
                                      return Value::Tuple({Value(i), v});
                                    })
                                    .Map([](Value v) { return v[1]; })
                                    .Batch(4),
                                all_o.num_threads ? "all threads" : "all serial");
  }
}

}  // namespace
}  // namespace spelt
