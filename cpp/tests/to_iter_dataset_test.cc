// Tests for MapDataset::ToIter (Grain's to_iter_dataset / PrefetchIterDataset, ops/to_iter_dataset.cc
// over the ordered core in exec/ordered_iterator.cc): order, nones,
// thread-count independence, {"next_index": n} states and checkpoint/restore at every
// position, malformed states, errors raised in order, and teardown with work in flight.
// Values marked "Grain 0.2.18" were computed with Grain 0.2.18.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/value.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

ReadOptions Opts(int64_t threads, int64_t buffer) { return ReadOptions{threads, buffer}; }

// Sum of a value that is either an int or a 1-d int64 array (a batch).
int64_t SumOf(const Value& v) {
  if (v.is<int64_t>()) return v.AsInt();
  const Array& a = v.AsArray();
  std::vector<int64_t> xs(static_cast<size_t>(a.num_elements()));
  if (!xs.empty()) std::memcpy(xs.data(), a.data, a.nbytes());
  int64_t s = 0;
  for (int64_t x : xs) s += x;
  return s;
}

bool NotMultipleOf3(const Value& v) { return v.AsInt() % 3 != 0; }

// The pipelines below are used with several read options.
const ReadOptions kAllOptions[] = {Opts(0, 0),  Opts(0, 500), Opts(1, 1),  Opts(1, 500),
                                   Opts(4, 1),  Opts(4, 2),   Opts(4, 7),  Opts(4, 500),
                                   Opts(16, 1), Opts(16, 3),  Opts(16, 64), Opts(16, 500),
                                   Opts(2, 0)};

TEST(PrefetchIterTest, OrderEqualsGetOrderSkippingFiltered) {
  MapDataset ds = MapDataset::Range(200).Seed(3).Shuffle().Filter(NotMultipleOf3);
  Ints expected;
  for (int64_t i = 0; i < ds.Length(); ++i) {
    if (std::optional<Value> v = ds.Get(i)) expected.push_back(v->AsInt());
  }
  ASSERT_EQ(expected.size(), 133u);
  for (const ReadOptions& o : kAllOptions) {
    auto it = ds.ToIter(o).MakeIterator();
    EXPECT_EQ(DrainInts(*it), expected) << o.num_threads << "/" << o.prefetch_buffer_size;
  }
}

TEST(PrefetchIterTest, StatesMatchGrain) {
  // Grain 0.2.18: it = iter(MapDataset.range(10).filter(lambda x: x % 3 != 0)
  //     .to_iter_dataset()); (element, it.get_state()) after each next(it); and the state
  // after exhaustion is {"next_index": 10}.
  const int64_t kElements[] = {1, 2, 4, 5, 7, 8};
  const int64_t kNextIndex[] = {2, 3, 5, 6, 8, 9};
  for (const ReadOptions& o : kAllOptions) {
    auto it = MapDataset::Range(10).Filter(NotMultipleOf3).ToIter(o).MakeIterator();
    EXPECT_EQ(it->GetState(), State({{"next_index", 0}}));
    for (int i = 0; i < 6; ++i) {
      std::optional<Value> v = it->Next();
      ASSERT_TRUE(v.has_value());
      EXPECT_EQ(v->AsInt(), kElements[i]);
      EXPECT_EQ(it->GetState(), State({{"next_index", kNextIndex[i]}}))
          << o.num_threads << "/" << o.prefetch_buffer_size << " after " << i;
    }
    EXPECT_FALSE(it->Next().has_value());
    EXPECT_EQ(it->GetState(), State({{"next_index", 10}}));
  }
}

TEST(PrefetchIterTest, AllowNonesYieldsNoneForFilteredElements) {
  // Grain 0.2.18: to_iter_dataset(allow_nones=True) over range(10).filter(x % 3 != 0) gives
  // None, 1, 2, None, 4, 5, None, 7, 8, None with next_index = 1, 2, ..., 10.
  for (const ReadOptions& o : kAllOptions) {
    auto it = MapDataset::Range(10).Filter(NotMultipleOf3).ToIter(o, true).MakeIterator();
    for (int64_t i = 0; i < 10; ++i) {
      std::optional<Value> v = it->Next();
      ASSERT_TRUE(v.has_value()) << i;
      if (i % 3 == 0) {
        EXPECT_TRUE(v->is_none()) << i;
      } else {
        EXPECT_EQ(v->AsInt(), i);
      }
      EXPECT_EQ(it->GetState(), State({{"next_index", i + 1}}));
    }
    EXPECT_FALSE(it->Next().has_value());
  }
}

TEST(PrefetchIterTest, ResultsIndependentOfThreadsAndBufferForRandomPipeline) {
  MapDataset ds = MapDataset::Range(300)
                      .Seed(11)
                      .Shuffle()
                      .RandomMap([](Value v, Philox& rng) {
                        const auto r = static_cast<int64_t>(rng.NextUint64() % 1000);
                        return Value(v.AsInt() * 1000 + r);
                      })
                      .Filter([](const Value& v) { return v.AsInt() % 7 != 0; })
                      .MapWithIndex([](int64_t i, Value v) { return Value(v.AsInt() + i); });
  auto ref_it = ds.ToIter(Opts(0, 0)).MakeIterator();
  const Ints reference = DrainInts(*ref_it);
  ASSERT_GT(reference.size(), 200u);
  for (const ReadOptions& o : kAllOptions) {
    auto it = ds.ToIter(o).MakeIterator();
    EXPECT_EQ(DrainInts(*it), reference) << o.num_threads << "/" << o.prefetch_buffer_size;
  }
}

TEST(PrefetchIterTest, EndOfStreamReturnsNulloptRepeatedly) {
  for (const ReadOptions& o : kAllOptions) {
    for (MapDataset ds : {MapDataset::Range(5), MapDataset::Range(0),
                          MapDataset::Range(8).Filter([](const Value&) { return false; })}) {
      auto it = ds.ToIter(o).MakeIterator();
      Drain(*it);
      for (int i = 0; i < 5; ++i) EXPECT_FALSE(it->Next().has_value());
      EXPECT_EQ(it->GetState(), State({{"next_index", ds.Length()}}));
    }
  }
}

TEST(PrefetchIterTest, InfiniteDatasetStreamsAndCanBeDropped) {
  for (const ReadOptions& o : kAllOptions) {
    auto it = MapDataset::Range(3).Repeat().ToIter(o).MakeIterator();
    Ints first;
    for (int i = 0; i < 10; ++i) first.push_back(it->Next()->AsInt());
    EXPECT_EQ(first, (Ints{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}));
    EXPECT_EQ(it->GetState(), State({{"next_index", 10}}));
  }
}

TEST(PrefetchIterTest, InvalidReadOptionsThrow) {
  EXPECT_THROW(MapDataset::Range(5).ToIter(Opts(-1, 10)), std::invalid_argument);
  EXPECT_THROW(MapDataset::Range(5).ToIter(Opts(2, -1)), std::invalid_argument);
}

TEST(PrefetchIterTest, CheckpointAtEveryPositionShuffledFilteredBatched) {
  // Shuffle + filter + batch on the MapDataset side (batch before filter), then read-ahead,
  // then an IterDataset filter + batch on top.
  MapDataset base = MapDataset::Range(90)
                        .Seed(5)
                        .Shuffle()
                        .Batch(3)
                        .Filter([](const Value& v) { return SumOf(v) % 4 != 0; });
  for (const ReadOptions& o : {Opts(0, 0), Opts(1, 1), Opts(4, 8), Opts(16, 3)}) {
    const std::string what =
        std::to_string(o.num_threads) + "/" + std::to_string(o.prefetch_buffer_size);
    CheckRestoreAtEveryPosition(base.ToIter(o), "map-batched " + what);
    CheckRestoreAtEveryPosition(
        MapDataset::Range(60).Seed(9).Shuffle().Filter(NotMultipleOf3).ToIter(o).Batch(4),
        "iter-batched " + what);
  }
}

TEST(PrefetchIterTest, SetStateSkipsAheadAndBack) {
  MapDataset ds = MapDataset::Range(20).Filter(NotMultipleOf3);
  for (const ReadOptions& o : kAllOptions) {
    auto it = ds.ToIter(o).MakeIterator();
    EXPECT_EQ(it->Next()->AsInt(), 1);
    it->SetState(State{{"next_index", 15}});
    EXPECT_EQ(it->Next()->AsInt(), 16);
    it->SetState(State{{"next_index", 2}});
    EXPECT_EQ(it->Next()->AsInt(), 2);
    EXPECT_EQ(it->Next()->AsInt(), 4);
    it->SetState(State{{"next_index", 20}});
    EXPECT_FALSE(it->Next().has_value());
    it->SetState(State{{"next_index", 0}});
    EXPECT_EQ(DrainInts(*it), (Ints{1, 2, 4, 5, 7, 8, 10, 11, 13, 14, 16, 17, 19}));
  }
}

TEST(PrefetchIterTest, MalformedStateThrowsInvalidArgument) {
  for (const ReadOptions& o : {Opts(0, 0), Opts(4, 16)}) {
    auto it = MapDataset::Range(10).ToIter(o).MakeIterator();
    EXPECT_THROW(it->SetState(State::object()), std::invalid_argument);
    EXPECT_THROW(it->SetState(State{{"next", 3}}), std::invalid_argument);
    EXPECT_THROW(it->SetState(State{{"next_index", "3"}}), std::invalid_argument);
    EXPECT_THROW(it->SetState(State{{"next_index", 1.5}}), std::invalid_argument);
    EXPECT_THROW(it->SetState(State{{"next_index", nullptr}}), std::invalid_argument);
    // Grain: IndexError, for any int outside [0, length].
    EXPECT_THROW(it->SetState(State{{"next_index", -1}}), std::out_of_range);
    EXPECT_THROW(it->SetState(State{{"next_index", 11}}), std::out_of_range);
    EXPECT_THROW(it->SetState(State{{"next_index", 1e21}}), std::out_of_range);
    EXPECT_THROW(it->SetState(State{{"next_index", 3.0}}), std::invalid_argument);
    EXPECT_THROW(it->SetState(State::array({1, 2})), std::invalid_argument);
    EXPECT_THROW(it->SetState(State(5)), std::invalid_argument);
    EXPECT_THROW(it->SetState(State()), std::invalid_argument);
    // The message names the field.
    try {
      it->SetState(State::object());
      ADD_FAILURE() << "no throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("next_index"), std::string::npos) << e.what();
    }
    // A failed SetState leaves a usable iterator.
    it->SetState(State{{"next_index", 7}});
    EXPECT_EQ(DrainInts(*it), (Ints{7, 8, 9}));
  }
}

// A map that fails on the given element values.
MapDataset FailingAt(int64_t n, std::vector<int64_t> bad, bool slow = false) {
  return MapDataset::Range(n).Map([bad, slow](Value v) -> Value {
    const int64_t x = v.AsInt();
    if (slow && x % 5 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    for (int64_t b : bad) {
      if (x == b) throw std::runtime_error("map failed at " + std::to_string(x));
    }
    return Value(x * 2);
  });
}

TEST(PrefetchIterTest, ErrorIsRaisedInOrderAndIteratorContinues) {
  for (const ReadOptions& o : kAllOptions) {
    const std::string what =
        std::to_string(o.num_threads) + "/" + std::to_string(o.prefetch_buffer_size);
    auto it = FailingAt(100, {37, 38, 64, 99}, /*slow=*/true).ToIter(o).MakeIterator();
    Ints got;
    std::vector<std::string> errors;
    for (int guard = 0; guard < 200; ++guard) {
      try {
        std::optional<Value> v = it->Next();
        if (!v) break;
        got.push_back(v->AsInt() / 2);
      } catch (const std::runtime_error& e) {
        errors.push_back(e.what());
        // Everything before the failing element was delivered, in order.
        const int64_t failed = std::stoll(std::string(e.what()).substr(14));
        const int64_t before =
            static_cast<int64_t>(got.size()) + static_cast<int64_t>(errors.size()) - 1;
        EXPECT_EQ(failed, before) << what;
        EXPECT_EQ(it->GetState(), State({{"next_index", failed + 1}})) << what;
      }
    }
    EXPECT_EQ(errors, (std::vector<std::string>{"map failed at 37", "map failed at 38",
                                                "map failed at 64", "map failed at 99"}))
        << what;
    Ints expected;
    for (int64_t i = 0; i < 100; ++i) {
      if (i != 37 && i != 38 && i != 64 && i != 99) expected.push_back(i);
    }
    EXPECT_EQ(got, expected) << what;
    EXPECT_FALSE(it->Next().has_value()) << what;
  }
}

TEST(PrefetchIterTest, ErrorAfterRestoreIsStillRaised) {
  for (const ReadOptions& o : {Opts(0, 0), Opts(4, 16)}) {
    auto it = FailingAt(30, {20}).ToIter(o).MakeIterator();
    it->SetState(State{{"next_index", 18}});
    EXPECT_EQ(it->Next()->AsInt(), 36);
    EXPECT_EQ(it->Next()->AsInt(), 38);
    EXPECT_THROW(it->Next(), std::runtime_error);
    EXPECT_EQ(it->Next()->AsInt(), 42);
  }
}

TEST(PrefetchIterTest, DestroyWithWorkInFlightDoesNotHang) {
  std::atomic<int> calls{0};
  MapDataset slow = MapDataset::Range(100000).Map([&calls](Value v) {
    calls.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    return v;
  });
  const auto start = std::chrono::steady_clock::now();
  for (const ReadOptions& o : {Opts(4, 500), Opts(16, 64), Opts(16, 500), Opts(1, 1)}) {
    {
      auto it = slow.ToIter(o).MakeIterator();
      EXPECT_EQ(it->Next()->AsInt(), 0);
    }  // destroyed with chunks queued and running
    {
      auto it = slow.ToIter(o).MakeIterator();
      EXPECT_EQ(it->Next()->AsInt(), 0);
      it->SetState(State{{"next_index", 5000}});
      EXPECT_EQ(it->Next()->AsInt(), 5000);
    }
    { auto it = slow.ToIter(o).MakeIterator(); }  // never started
  }
  // Far from reading all 100000 elements (which would take tens of seconds).
  EXPECT_LT(calls.load(), 20000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(PrefetchIterTest, DestroyAfterErrorDoesNotHang) {
  auto it = FailingAt(10000, {3}, /*slow=*/true).ToIter(Opts(8, 200)).MakeIterator();
  for (int i = 0; i < 3; ++i) it->Next();
  EXPECT_THROW(it->Next(), std::runtime_error);
  it.reset();
}

TEST(PrefetchIterTest, IteratorOutlivesDatasetHandle) {
  std::unique_ptr<DatasetIterator> it;
  {
    MapDataset ds = MapDataset::Range(50).Map([](Value v) { return Value(v.AsInt() + 1); });
    it = ds.ToIter(Opts(4, 16)).MakeIterator();
  }
  Ints got = DrainInts(*it);
  ASSERT_EQ(got.size(), 50u);
  EXPECT_EQ(got.front(), 1);
  EXPECT_EQ(got.back(), 50);
}

TEST(PrefetchIterTest, ThreadsComputeSerialAndParallelPipelinesAlike) {
  const std::thread::id main_id = std::this_thread::get_id();
  std::atomic<int> off_thread{0}, on_thread{0};
  auto record = [&](Value v) {
    (std::this_thread::get_id() == main_id ? on_thread : off_thread).fetch_add(1);
    return v;
  };
  Ints expected(50);
  for (int64_t i = 0; i < 50; ++i) expected[static_cast<size_t>(i)] = i;
  for (const bool calls_python : {true, false}) {
    {  // num_threads 0: every element computed by the consumer
      on_thread = off_thread = 0;
      auto it = MapDataset::Range(50).Map(record, calls_python).ToIter(Opts(0, 64)).MakeIterator();
      EXPECT_EQ(DrainInts(*it), expected);
      EXPECT_EQ(on_thread.load(), 50);
      EXPECT_EQ(off_thread.load(), 0);
    }
    {  // threads: in index order, each element computed once (calling Python: by whoever is free)
      on_thread = off_thread = 0;
      auto it = MapDataset::Range(50).Map(record, calls_python).ToIter(Opts(8, 64)).MakeIterator();
      EXPECT_EQ(DrainInts(*it), expected);
      EXPECT_EQ(on_thread.load() + off_thread.load(), 50);
      if (!calls_python) EXPECT_EQ(on_thread.load(), 0);
    }
  }
}

TEST(PrefetchIterTest, IndependentIteratorsDoNotInterfere) {
  IterDataset ds = MapDataset::Range(40).Shuffle(1).ToIter(Opts(4, 8));
  auto a = ds.MakeIterator();
  auto b = ds.MakeIterator();
  Ints from_a, from_b;
  for (int i = 0; i < 40; ++i) {
    from_a.push_back(a->Next()->AsInt());
    if (i % 2 == 0) from_b.push_back(b->Next()->AsInt());
  }
  Ints rest_b = DrainInts(*b);
  from_b.insert(from_b.end(), rest_b.begin(), rest_b.end());
  EXPECT_EQ(from_a, from_b);
}

}  // namespace
}  // namespace spelt
