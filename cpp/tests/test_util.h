// Helpers shared by the GoogleTest files: reading datasets and iterators as integers, and the
// checkpoint-at-every-position check.
#ifndef SPELT_CPP_TESTS_TEST_UTIL_H_
#define SPELT_CPP_TESTS_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/random.h"
#include "spelt/value.h"

namespace spelt::testing {

using Ints = std::vector<int64_t>;

// Elements [start, start + n) of ds as integers (fails on a filtered element).
inline Ints GetInts(const MapDataset& ds, int64_t n, int64_t start = 0) {
  Ints out;
  for (int64_t i = start; i < start + n; ++i) {
    std::optional<Value> v = ds.Get(i);
    EXPECT_TRUE(v.has_value()) << "index " << i;
    out.push_back(v ? v->AsInt() : -999);
  }
  return out;
}

// A 1-d int64 array (a batch of int scalars) as integers.
inline Ints ArrayInts(const Value& v) {
  const Array& a = v.AsArray();
  EXPECT_EQ(a.dtype, DType::kInt64);
  EXPECT_EQ(a.shape.size(), 1u);
  Ints out(static_cast<size_t>(a.num_elements()));
  if (!out.empty()) std::memcpy(out.data(), a.data, a.nbytes());
  return out;
}

// The rest of the stream (at most `limit` elements).
inline std::vector<Value> Drain(DatasetIterator& it, size_t limit = 100000) {
  std::vector<Value> out;
  while (out.size() < limit) {
    std::optional<Value> v = it.Next();
    if (!v) break;
    out.push_back(std::move(*v));
  }
  return out;
}

inline Ints AsInts(const std::vector<Value>& vs) {
  Ints out;
  for (const Value& v : vs) out.push_back(v.AsInt());
  return out;
}

inline Ints DrainInts(DatasetIterator& it) { return AsInts(Drain(it)); }

inline ReadOptions Serial() { return ReadOptions{0, 0}; }
inline ReadOptions Threads(int64_t n, int64_t buffer) { return ReadOptions{n, buffer}; }

inline IterDataset RangeIter(int64_t n, ReadOptions o = Serial()) {
  return MapDataset::Range(n).ToIter(o);
}

// A random_map function returning the rng's first raw 64-bit draw.
inline Value FirstRaw(Value, Philox& rng) { return Value(static_cast<int64_t>(rng.NextUint64())); }

// x -> [10x, 10x+1, ...] with x % 3 elements (0, 1 or 2 outputs).
inline std::vector<Value> SplitByMod3(Value v) {
  std::vector<Value> out;
  const int64_t x = v.AsInt();
  for (int64_t j = 0; j < x % 3; ++j) out.push_back(Value(x * 10 + j));
  return out;
}

// Checkpoints after every k elements, restores into a fresh iterator and into one already
// mid-stream, and checks that each yields exactly the remainder and that GetState() did not
// disturb the original; also checks a checkpoint taken at the end of the stream.
inline void CheckRestoreAtEveryPosition(const IterDataset& ds, const std::string& what) {
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
    // The original iterator was not disturbed by GetState().
    ASSERT_EQ(Drain(*it).size(), rest.size()) << what << " k=" << k;
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

}  // namespace spelt::testing

#endif  // SPELT_CPP_TESTS_TEST_UTIL_H_
