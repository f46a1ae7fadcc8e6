// Tests for the ordered-execution core (spelt/executor.h): ComputeChunk, the inline and
// thread-pool executors, and the ordered iterator's rules when an executor fails.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/executor.h"
#include "spelt/read_threads.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

// Range(n) that records the size of every GetMany call and fails at index `bad`.
class RecordingNode final : public MapNode {
 public:
  RecordingNode(int64_t n, int64_t bad) : MapNode({}), n_(n), bad_(bad) {}
  std::string Name() const override { return "RecordingNode"; }
  int64_t Length() const override { return n_; }
  std::optional<Value> Get(int64_t index) const override {
    if (index == bad_) throw std::runtime_error("bad " + std::to_string(index));
    return Value(index % n_);
  }
  void GetMany(std::span<const int64_t> indices,
               std::vector<std::optional<Value>>* out) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      sizes_.push_back(static_cast<int64_t>(indices.size()));
    }
    MapNode::GetMany(indices, out);
  }
  std::vector<int64_t> sizes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sizes_;
  }

 private:
  int64_t n_, bad_;
  mutable std::mutex mu_;
  mutable std::vector<int64_t> sizes_;
};

TEST(ComputeChunkTest, KeepsTheElementsBeforeAnErrorAndNamesIt) {
  RecordingNode node(100, 13);
  ChunkResult r = ComputeChunk(node, 10, 8);
  EXPECT_EQ(r.begin, 10);
  EXPECT_EQ(r.count, 8);
  ASSERT_EQ(r.values.size(), 3u);  // 10, 11, 12
  EXPECT_EQ(r.values[2]->AsInt(), 12);
  ASSERT_TRUE(r.error);
  try {
    std::rethrow_exception(r.error);
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad 13");
  }
  EXPECT_EQ(node.sizes(), (std::vector<int64_t>{8}));  // one batched read for the chunk
}

TEST(InlineExecutorTest, ChunksGrowFromOneToTheMaximum) {
  auto node = std::make_shared<RecordingNode>(100, -1);
  auto it = MakeOrderedIterator(100, false, MakeInlineExecutor(node, 16));
  Ints expected(100);
  for (int64_t i = 0; i < 100; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(DrainInts(*it), expected);
  EXPECT_EQ(node->sizes(), (std::vector<int64_t>{1, 2, 4, 8, 16, 16, 16, 16, 16, 5}));
}

// 64 KiB elements; every GetMany waits 3 ms, as a batch of reads from a remote store shares
// one round trip. Records the size of every GetMany call.
class WaitingNode final : public MapNode {
 public:
  explicit WaitingNode(int64_t n) : MapNode({}), n_(n) {}
  std::string Name() const override { return "WaitingNode"; }
  int64_t Length() const override { return n_; }
  std::optional<Value> Get(int64_t index) const override {
    Array a = Array::AllocateUninitialized(DType::kUint8, {kBytes});
    std::memset(a.mutable_data(), static_cast<int>(index % 251), kBytes);
    return Value(std::move(a));
  }
  void GetMany(std::span<const int64_t> indices,
               std::vector<std::optional<Value>>* out) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      sizes_.push_back(static_cast<int64_t>(indices.size()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    MapNode::GetMany(indices, out);
  }
  std::vector<int64_t> sizes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sizes_;
  }
  static constexpr int64_t kBytes = 64 << 10;

 private:
  int64_t n_;
  mutable std::mutex mu_;
  mutable std::vector<int64_t> sizes_;
};

// Drains `it` over WaitingNode(n), checking each element's bytes.
void DrainWaiting(DatasetIterator& it, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const std::optional<Value> v = it.Next();
    ASSERT_TRUE(v.has_value());
    ASSERT_EQ(static_cast<int64_t>(v->AsArray().data[0]), i % 251) << i;
  }
  EXPECT_FALSE(it.Next().has_value());
}

// 1 MiB of 64 KiB elements is 16 per chunk; chunks that wait grow past it (up to 64 MiB), so
// that one round trip serves more reads. The elements are the same.
TEST(InlineExecutorTest, ChunksThatWaitGrowPastOneMebibyte) {
  auto node = std::make_shared<WaitingNode>(2048);
  auto it = MakeOrderedIterator(2048, false, MakeInlineExecutor(node));
  DrainWaiting(*it, 2048);
  const std::vector<int64_t> sizes = node->sizes();
  EXPECT_GT(*std::max_element(sizes.begin(), sizes.end()), 16);
  EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()), 1024);  // 64 MiB
  EXPECT_LT(sizes.size(), 2048u / 16 / 2) << "chunks did not grow";
}

// The runners' chunks that wait grow past 1 MiB (16 elements of 64 KiB) up to their element
// limit (64 here: prefetch_buffer_size / (2 * 2 threads), at most 64), which stays: the elements
// read ahead stay about prefetch_buffer_size.
TEST(ThreadPoolExecutorTest, ChunksThatWaitGrowInBytesNotInElements) {
  auto node = std::make_shared<WaitingNode>(2048);
  auto it = MakeOrderedIterator(2048, false, MakeThreadPoolExecutor(node, ReadOptions{2, 512}));
  DrainWaiting(*it, 2048);
  const std::vector<int64_t> sizes = node->sizes();
  EXPECT_GT(*std::max_element(sizes.begin(), sizes.end()), 16) << "chunks did not grow";
  EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()), 64);
}

TEST(ThreadPoolExecutorTest, TheFirstChunkIsOneElementAlone) {
  // Until an element's size is known, no chunk can be sized in bytes: the first chunk is one
  // element, submitted alone; once it is taken, 7 chunks of 64 go in flight (prefetch 448).
  auto node = std::make_shared<RecordingNode>(200, -1);
  auto executor = MakeThreadPoolExecutor(node, ReadOptions{1, 448});
  EXPECT_EQ(executor->MaxInFlight(), 0);
  auto it = MakeOrderedIterator(200, false, std::move(executor));
  EXPECT_EQ(it->Next()->AsInt(), 0);
  EXPECT_EQ(node->sizes(), std::vector<int64_t>{1});  // nothing else was submitted before it
  Ints rest = DrainInts(*it);
  ASSERT_EQ(rest.size(), 199u);
  EXPECT_EQ(rest.front(), 1);
  EXPECT_EQ(rest.back(), 199);
  const std::vector<int64_t> sizes = node->sizes();  // in submission order: one runner
  EXPECT_EQ(sizes, (std::vector<int64_t>{1, 64, 64, 64, 7}));
}

TEST(ThreadPoolExecutorTest, RejectsBadOptions) {
  auto node = std::make_shared<RecordingNode>(10, -1);
  EXPECT_THROW(MakeThreadPoolExecutor(node, ReadOptions{0, 10}), std::invalid_argument);
  EXPECT_THROW(MakeThreadPoolExecutor(node, ReadOptions{2, 0}), std::invalid_argument);
}

// Range(n) whose GetMany records the read budget it is given (spelt/read_threads.h).
class BudgetNode final : public MapNode {
 public:
  explicit BudgetNode(int64_t n) : MapNode({}), n_(n) {}
  std::string Name() const override { return "BudgetNode"; }
  int64_t Length() const override { return n_; }
  std::optional<Value> Get(int64_t index) const override { return Value(index); }
  void GetMany(std::span<const int64_t> indices,
               std::vector<std::optional<Value>>* out) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      budgets_.push_back(ReadThreads());
    }
    MapNode::GetMany(indices, out);
  }
  std::vector<int> budgets() const {
    std::lock_guard<std::mutex> lock(mu_);
    return budgets_;
  }

 private:
  int64_t n_;
  mutable std::mutex mu_;
  mutable std::vector<int> budgets_;
};

TEST(ReadThreadsTest, IsOneOutsideAnyChunkAndScopesNest) {
  EXPECT_EQ(ReadThreads(), 1);
  {
    ScopedReadThreads outer(4);
    EXPECT_EQ(ReadThreads(), 4);
    {
      ScopedReadThreads inner(0);  // at least 1
      EXPECT_EQ(ReadThreads(), 1);
    }
    EXPECT_EQ(ReadThreads(), 4);
    std::thread([] { EXPECT_EQ(ReadThreads(), 1); }).join();  // per thread
  }
  EXPECT_EQ(ReadThreads(), 1);
}

TEST(ReadThreadsTest, ChunksShareTheIteratorsThreadsAndTheInlineExecutorReadsOnOne) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const int64_t num_threads : {1, 3, 64}) {
    const int budget = std::min(static_cast<int>(num_threads), cores);
    // A chunk computed alone (the only one of a one-element iterator) gets the whole budget.
    auto alone = std::make_shared<BudgetNode>(1);
    auto it = MakeOrderedIterator(1, false, MakeThreadPoolExecutor(alone, {num_threads, 16}));
    EXPECT_EQ(Drain(*it).size(), 1u);
    EXPECT_EQ(alone->budgets(), std::vector<int>{budget}) << "num_threads " << num_threads;
    // Chunks computed at once share it.
    auto shared = std::make_shared<BudgetNode>(400);
    it = MakeOrderedIterator(400, false, MakeThreadPoolExecutor(shared, {num_threads, 64}));
    EXPECT_EQ(Drain(*it).size(), 400u);
    ASSERT_FALSE(shared->budgets().empty());
    for (int b : shared->budgets()) {
      EXPECT_GE(b, 1);
      EXPECT_LE(b, budget) << "num_threads " << num_threads;
    }
    EXPECT_EQ(ReadThreads(), 1);  // the consumer's own budget is untouched
  }
  auto node = std::make_shared<BudgetNode>(100);
  auto it = MakeOrderedIterator(100, false, MakeInlineExecutor(node, 16));
  EXPECT_EQ(Drain(*it).size(), 100u);
  for (int b : node->budgets()) EXPECT_EQ(b, 1);
}

// An executor whose Take() fails once at the chunk that starts at `fail_at` (as a dead
// worker process would), then works.
class FlakyExecutor final : public ChunkExecutor {
 public:
  FlakyExecutor(std::shared_ptr<const MapNode> node, int64_t fail_at, int* submits)
      : node_(std::move(node)), fail_at_(fail_at), submits_(submits) {}
  int64_t MaxInFlight() const override { return 3; }
  int64_t NextChunkSize() override { return 4; }
  std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) override {
    ++*submits_;
    struct Chunk final : PendingChunk {
      FlakyExecutor* self;
      int64_t begin, count;
      ChunkResult Take() override {
        if (begin == self->fail_at_ && !self->failed_) {
          self->failed_ = true;
          throw std::runtime_error("executor lost chunk " + std::to_string(begin));
        }
        return ComputeChunk(*self->node_, begin, count);
      }
    };
    auto c = std::make_unique<Chunk>();
    c->self = this;
    c->begin = begin;
    c->count = count;
    return c;
  }

 private:
  std::shared_ptr<const MapNode> node_;
  int64_t fail_at_;
  bool failed_ = false;
  int* submits_;
};

TEST(OrderedIteratorTest, ExecutorFailureKeepsThePositionAndLosesNothing) {
  int submits = 0;
  auto node = std::make_shared<RecordingNode>(20, -1);
  auto it = MakeOrderedIterator(20, false, std::make_unique<FlakyExecutor>(node, 8, &submits));
  Ints got;
  for (int i = 0; i < 8; ++i) got.push_back(it->Next()->AsInt());
  EXPECT_EQ(it->GetState(), (State{{"next_index", 8}}));
  EXPECT_THROW(it->Next(), std::runtime_error);
  EXPECT_EQ(it->GetState(), (State{{"next_index", 8}}));
  for (const Value& v : Drain(*it)) got.push_back(v.AsInt());
  Ints expected(20);
  for (int64_t i = 0; i < 20; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(got, expected);
}

TEST(OrderedIteratorTest, RestoreWorksWithAnotherExecutor) {
  MapDataset ds = MapDataset::Range(50).Shuffle(3);
  auto threads = MakeOrderedIterator(50, false, MakeThreadPoolExecutor(ds.node(), {4, 16}));
  Ints head;
  for (int i = 0; i < 17; ++i) head.push_back(threads->Next()->AsInt());
  auto inline_it = MakeOrderedIterator(50, false, MakeInlineExecutor(ds.node()));
  inline_it->SetState(threads->GetState());
  EXPECT_EQ(DrainInts(*inline_it), DrainInts(*threads));
}

}  // namespace
}  // namespace spelt
