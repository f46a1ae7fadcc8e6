// to_iter_dataset().batch(n) as whole batches (spelt/batched_read_ahead.h): batch k is
// BatchMapDataset over the parent's indices [m + k*n, m + (k+1)*n), m being where the iterator
// started or was restored, computed where BatchesAhead says (the read-ahead threads, the
// consumer without them, or worker processes), so that the source gathers it or the maps write
// it in place, and the consumer thread only hands batches out. Without this, the consumer took
// every element from the read-ahead and stacked them itself (M1 and H1 in docs/benchmarks.md).
// An error in a batch hands over to the element-wise iterator restored at that batch's start,
// which raises it at the same element with the same state.
#include "spelt/batched_read_ahead.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "ops/batch.h"
#include "ops/slice.h"
#include "spelt/stage_stats.h"

namespace spelt {
namespace {

using internal::BatchesBefore;
using internal::FirstOfBatch;
using internal::PositionState;

constexpr const char* kName = "PrefetchIterDataset";

class BatchedReadAheadIterator final : public DatasetIterator {
 public:
  BatchedReadAheadIterator(int64_t length, int64_t batch_size,
                           std::unique_ptr<BatchesAhead> batches,
                           std::function<std::unique_ptr<DatasetIterator>()> elementwise)
      : length_(length), batch_size_(batch_size), source_(std::move(batches)),
        elementwise_(std::move(elementwise)) {
    Start(0);
  }

  std::optional<Value> Next() override {
    if (Elementwise()) return fallback_->Next();
    std::optional<Value> batch;
    try {
      batch = batches_->Next();
    } catch (...) {
      batches_.reset();  // worker processes go back to their keeper for the element-wise one
      if (source_->RaiseAsIs()) throw;
      Elementwise();
      return fallback_->Next();
    }
    // At the end, the element-wise iterator has consumed the whole parent (a dropped
    // remainder included).
    next_index_ = batch ? std::min(length_, next_index_ + batch_size_) : length_;
    if (batch && !sized_) {
      sized_ = true;
      const int64_t bytes = ValueBytes(*batch);
      if (bytes > 0) {
        switch (source_->OnFirstBatch(bytes)) {
          case BatchesAhead::Sized::kGoOn:
            break;
          case BatchesAhead::Sized::kElementwise:
            batches_.reset();  // Elementwise() takes over at next_index_
            break;
        }
      }
    }
    return batch;
  }

  void StartPrefetch() override {
    if (Elementwise()) {
      fallback_->StartPrefetch();
    } else {
      batches_->StartPrefetch();
    }
  }

  // After an error hands over to element-wise batching, the pool still reads the elements
  // ahead, and the consumer stacks them.
  bool AbsorbReadAhead(int64_t elements) override {
    return batches_ != nullptr && source_->AbsorbReadAhead(elements);
  }

  State GetState() const override {
    if (fallback_) return fallback_->GetState();
    return PositionState(next_index_);  // also after an error, before the element-wise one
  }

  void SetState(const State& state) override {
    const int64_t n = internal::StateNextIndex(state, length_, kName);
    fallback_.reset();
    Start(n);
  }

  // The element-wise iterator's state is the same position: both batch a position's index.
  int64_t NextIndexOf(const State& state) const override {
    return BatchesBefore(internal::StateInt(state, kNextIndexKey, kName), batch_size_);
  }
  State StateAtIndex(int64_t index, const State& /*state*/) const override {
    return PositionState(FirstOfBatch(index, batch_size_));
  }

 private:
  // True after an error (batches_ is null then): the element-wise iterator, made restored at
  // the failed batch's start when first needed, hands the elements out.
  bool Elementwise() {
    if (fallback_) return true;
    if (batches_) return false;
    fallback_ = elementwise_();
    fallback_->SetState(PositionState(next_index_));
    return true;
  }

  void Start(int64_t begin) {
    next_index_ = begin;
    batches_.reset();
    batches_ = source_->From(begin);
  }

  const int64_t length_;
  const int64_t batch_size_;
  const std::unique_ptr<BatchesAhead> source_;
  const std::function<std::unique_ptr<DatasetIterator>()> elementwise_;
  int64_t next_index_ = 0;  // parent elements consumed
  bool sized_ = false;       // OnFirstBatch() was told the first batch's size
  std::unique_ptr<DatasetIterator> batches_;
  std::unique_ptr<DatasetIterator> fallback_;  // after an error
};

}  // namespace

std::shared_ptr<const MapNode> MakeBatchesFromNode(
    std::shared_ptr<const MapNode> parent, int64_t begin, int64_t batch_size,
    bool drop_remainder, std::function<bool(const Value&)> is_none_marker) {
  const int64_t length = parent->Length();
  if (begin < 0 || begin > length) {
    throw std::out_of_range("batches from element " + std::to_string(begin) + " of " +
                            std::to_string(length));
  }
  if (begin > 0) parent = internal::MakeSliceNode(std::move(parent), begin, length, /*step=*/1);
  return internal::MakeBatchMapNode(std::move(parent), batch_size, drop_remainder, {},
                                    {.raise = true, .is_marker = std::move(is_none_marker)});
}

std::unique_ptr<DatasetIterator> MakeBatchedReadAheadIterator(
    int64_t length, int64_t batch_size, std::unique_ptr<BatchesAhead> batches,
    std::function<std::unique_ptr<DatasetIterator>()> elementwise) {
  return std::make_unique<BatchedReadAheadIterator>(length, batch_size, std::move(batches),
                                                    std::move(elementwise));
}

}  // namespace spelt
