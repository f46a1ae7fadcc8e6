// Tests for the execution-summary counters (spelt/stage_stats.h, exec/stage_stats.cc):
// profiled nodes yield exactly what the plain nodes yield, and count elements, bytes and time.
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/stage_stats.h"
#include "spelt/value.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

// Wraps each node of range(n).map(x * 2 with a 1 ms sleep).to_iter(options).batch(4).
struct Profiled {
  std::shared_ptr<StageStats> range = std::make_shared<StageStats>();
  std::shared_ptr<StageStats> map = std::make_shared<StageStats>();
  std::shared_ptr<StageStats> to_iter = std::make_shared<StageStats>();
  std::shared_ptr<StageStats> batch = std::make_shared<StageStats>();

  static Value SlowDouble(Value v) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Value(v.AsInt() * 2);
  }
  IterDataset Build(int64_t n, ReadOptions options) const {
    MapDataset source(ProfiledMapNode(MapDataset::Range(n).node(), range));
    MapDataset mapped(ProfiledMapNode(source.Map(SlowDouble).node(), map));
    IterDataset it(ProfiledIterNode(mapped.ToIter(options).node(), to_iter));
    return IterDataset(ProfiledIterNode(it.Batch(4).node(), batch));
  }
};

IterDataset Plain(int64_t n, ReadOptions options) {
  return MapDataset::Range(n).Map(Profiled::SlowDouble).ToIter(options).Batch(4);
}

TEST(StageStatsTest, ProfiledPipelineYieldsThePlainOutputAndStates) {
  for (const ReadOptions& options : {Serial(), Threads(3, 8)}) {
    Profiled p;
    const IterDataset profiled = p.Build(10, options);
    auto a = profiled.MakeIterator();
    auto b = Plain(10, options).MakeIterator();
    for (int k = 0; k < 4; ++k) {
      std::optional<Value> x = a->Next(), y = b->Next();
      ASSERT_EQ(x.has_value(), y.has_value());
      if (x) {
        EXPECT_EQ(*x, *y);
      }
      EXPECT_EQ(a->GetState(), b->GetState());
    }
    CheckRestoreAtEveryPosition(profiled, "profiled");
    EXPECT_EQ(profiled.node()->Name(), "BatchIterDataset");
  }
}

TEST(StageStatsTest, CountsElementsBytesAndTime) {
  Profiled p;
  auto it = p.Build(10, Serial()).MakeIterator();
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{0, 2, 4, 6}));
  Drain(*it);
  const StageCounters batch = p.batch->Snapshot(), to_iter = p.to_iter->Snapshot();
  const StageCounters map = p.map->Snapshot(), range = p.range->Snapshot();
  EXPECT_EQ(batch.elements, 3);  // 4 + 4 + 2
  EXPECT_EQ(to_iter.elements, 10);
  EXPECT_EQ(map.elements, 10);
  EXPECT_EQ(range.elements, 10);
  EXPECT_EQ(batch.bytes, 10 * 8);  // int64 arrays
  EXPECT_EQ(map.bytes, 0);         // scalars
  EXPECT_GE(map.self_ns, 10'000'000);  // ten 1 ms sleeps
  EXPECT_GE(batch.total_ns, to_iter.total_ns);
  EXPECT_GE(to_iter.total_ns, map.total_ns);
  EXPECT_LE(batch.self_ns, batch.total_ns - to_iter.total_ns + 1000);  // same thread: nested
  EXPECT_LE(map.self_ns, map.total_ns);
}

TEST(StageStatsTest, ThreadedReadAheadCountsTheRowsOfStackedBatches) {
  auto stats = std::make_shared<StageStats>();
  IterDataset to_iter(ProfiledIterNode(MapDataset::Range(100).ToIter(Threads(2, 16)).node(), stats));
  auto it = to_iter.Batch(10).MakeIterator();
  const std::vector<Value> batches = Drain(*it);
  ASSERT_EQ(batches.size(), 10u);
  EXPECT_EQ(ArrayInts(batches[3]), (Ints{30, 31, 32, 33, 34, 35, 36, 37, 38, 39}));
  EXPECT_EQ(stats->Snapshot().elements, 100);
  EXPECT_EQ(stats->Snapshot().bytes, 100 * 8);
}

TEST(StageStatsTest, ValueBytesSumsArraysAndStrings) {
  const Value v = Value::Dict({{"a", Value(Array::Allocate(DType::kFloat32, {3, 4}))},
                               {"b", Value::List({Value::Bytes("xyz"), Value(int64_t{7})})},
                               {"c", Value::Text("hello")}});
  EXPECT_EQ(ValueBytes(v), 48 + 3 + 5);
  EXPECT_EQ(ValueBytes(Value()), 0);
}

// A foreign leaf of 10 bytes that counts how often its size is asked.
class TenBytes final : public Opaque {
 public:
  Value Unpack() const override { return Value(int64_t{0}); }
  std::string Describe() const override { return "TenBytes"; }
  int64_t ByteSize() const override {
    ++asked;
    return 10;
  }
  mutable int asked = 0;
};

TEST(StageStatsTest, OpaqueBytesAreSampledAfterTheFirst64) {
  auto leaf = std::make_shared<TenBytes>();
  const Value v = Value::List({Value(std::shared_ptr<const Opaque>(leaf)), Value::Bytes("ab")});
  StageStats stats;
  int64_t total = 0;
  for (int i = 0; i < 200; ++i) total += stats.BytesOf(v);
  // Natives (2 bytes) every time; the opaque leaf on calls 0..63, then 64, 80, ..., 192 (x16).
  EXPECT_EQ(leaf->asked, 64 + 9);
  EXPECT_EQ(total, 200 * 2 + 64 * 10 + 9 * 16 * 10);
}

TEST(StageStatsTest, NullArgumentsThrow) {
  EXPECT_THROW(ProfiledMapNode(nullptr, std::make_shared<StageStats>()), std::invalid_argument);
  EXPECT_THROW(ProfiledIterNode(RangeIter(3).node(), nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
