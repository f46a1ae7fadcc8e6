// Tests for spelt/batched_read_ahead.h (ops/batched_read_ahead.cc): the batches computed
// whole, and the iterator's hand-over to element-wise batching after an error.
#include "spelt/batched_read_ahead.h"

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

TEST(BatchesFromTest, BatchesTheSliceFromBegin) {
  const MapDataset ds = MapDataset::Range(10);
  const auto batches = MakeBatchesFromNode(ds.node(), 3, 3, /*drop_remainder=*/false);
  ASSERT_EQ(batches->Length(), 3);
  EXPECT_EQ(ArrayInts(*batches->Get(0)), (Ints{3, 4, 5}));
  EXPECT_EQ(ArrayInts(*batches->Get(2)), (Ints{9}));
  EXPECT_EQ(MakeBatchesFromNode(ds.node(), 3, 3, true)->Length(), 2);
  EXPECT_EQ(MakeBatchesFromNode(ds.node(), 10, 3, false)->Length(), 0);
  EXPECT_THROW(MakeBatchesFromNode(ds.node(), 11, 3, false), std::out_of_range);
  EXPECT_THROW(MakeBatchesFromNode(ds.node(), -1, 3, false), std::out_of_range);
}

// A None element (filtered, or a Python map's None) raises: to_iter_dataset would skip it. The
// marker is a None leaf instead.
TEST(BatchesFromTest, NoneRaisesAndTheMarkerIsNone) {
  const MapDataset filtered =
      MapDataset::Range(6).Filter([](const Value& v) { return v.AsInt() != 4; });
  const auto batches = MakeBatchesFromNode(filtered.node(), 0, 2, false);
  EXPECT_EQ(ArrayInts(*batches->Get(0)), (Ints{0, 1}));
  EXPECT_THROW(batches->Get(2), std::invalid_argument);
  std::vector<std::optional<Value>> got;
  EXPECT_THROW(batches->GetMany(std::vector<int64_t>{0, 1, 2}, &got), std::invalid_argument);
  ASSERT_EQ(got.size(), 2u);  // the batches before the failing one

  const auto marked = MakeBatchesFromNode(MapDataset::Range(3).node(), 0, 3, false,
                                          [](const Value& v) { return v.AsInt() >= 0; });
  // Stacked as Nones: without the Python face, Stack() has no object arrays for them.
  try {
    marked->Get(0);
    ADD_FAILURE() << "a batch of Nones stacked";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("object array"), std::string::npos) << e.what();
  }
}

// Batches of `parent` computed in the calling thread; the `fail_at`-th Next() over all the
// iterators made raises, as worker processes that failed (RaiseAsIs() == as_is) or an element.
class FailingBatches final : public BatchesAhead {
 public:
  FailingBatches(MapDataset parent, int64_t batch_size, int fail_at, bool as_is)
      : parent_(std::move(parent)), batch_size_(batch_size), fail_at_(fail_at), as_is_(as_is) {}

  std::unique_ptr<DatasetIterator> From(int64_t begin) override {
    ++starts;
    return std::make_unique<Iterator>(
        MapDataset(MakeBatchesFromNode(parent_.node(), begin, batch_size_, false))
            .ToIter(Serial())
            .MakeIterator(),
        this);
  }
  bool RaiseAsIs() override { return as_is_; }

  int starts = 0;

 private:
  class Iterator final : public DatasetIterator {
   public:
    Iterator(std::unique_ptr<DatasetIterator> batches, FailingBatches* owner)
        : batches_(std::move(batches)), owner_(owner) {}
    std::optional<Value> Next() override {
      if (owner_->calls_++ == owner_->fail_at_) throw std::runtime_error("workers failed");
      return batches_->Next();
    }
    State GetState() const override { return batches_->GetState(); }
    void SetState(const State& state) override { batches_->SetState(state); }

   private:
    std::unique_ptr<DatasetIterator> batches_;
    FailingBatches* owner_;
  };

  MapDataset parent_;
  int64_t batch_size_;
  int fail_at_;
  bool as_is_;
  int calls_ = 0;
};

std::unique_ptr<DatasetIterator> Batched(const MapDataset& ds, FailingBatches** batches,
                                         int fail_at, bool as_is) {
  auto owned = std::make_unique<FailingBatches>(ds, 4, fail_at, as_is);
  *batches = owned.get();
  return MakeBatchedReadAheadIterator(ds.Length(), 4, std::move(owned), [ds] {
    return ds.ToIter(Serial()).Batch(4).MakeIterator();
  });
}

// A failure that is not an element's is raised as it is, with the state at the failed batch's
// start; the element-wise iterator then goes on from there: nothing lost or repeated.
TEST(BatchedReadAheadTest, AFailureRaisedAsItIsLosesNothing) {
  const MapDataset ds = MapDataset::Range(14);
  FailingBatches* batches = nullptr;
  auto it = Batched(ds, &batches, /*fail_at=*/2, /*as_is=*/true);
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{0, 1, 2, 3}));
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{4, 5, 6, 7}));
  EXPECT_THROW(it->Next(), std::runtime_error);
  EXPECT_EQ(it->GetState(), State({{"next_index", 8}}));
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{8, 9, 10, 11}));
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{12, 13}));
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_EQ(it->GetState(), State({{"next_index", 14}}));
  // A restore computes whole batches again.
  it->SetState(State({{"next_index", 4}}));
  EXPECT_EQ(batches->starts, 2);
  EXPECT_EQ(ArrayInts(*it->Next()), (Ints{4, 5, 6, 7}));
}

// An element's error is not raised by the batches: the element-wise iterator computes the
// batch again and raises it at its element (here it does not recur, so nothing is raised).
TEST(BatchedReadAheadTest, AnElementsErrorIsLeftToTheElementwiseIterator) {
  const MapDataset ds = MapDataset::Range(10);
  FailingBatches* batches = nullptr;
  auto it = Batched(ds, &batches, /*fail_at=*/1, /*as_is=*/false);
  std::vector<Value> all = Drain(*it);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(ArrayInts(all[1]), (Ints{4, 5, 6, 7}));
  EXPECT_EQ(ArrayInts(all[2]), (Ints{8, 9}));
  EXPECT_EQ(batches->starts, 1);
}

}  // namespace
}  // namespace spelt
