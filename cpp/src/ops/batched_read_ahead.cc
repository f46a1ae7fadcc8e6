// to_iter_dataset().batch(n) as whole batches: the read-ahead threads (or, with num_threads 0,
// the consumer) compute batch k as BatchMapDataset over the parent's indices
// [m + k*n, m + (k+1)*n), m being where the iterator started or was restored, so that the
// source gathers it or the maps write it in place, and the consumer thread only hands batches
// out. Without this, the
// consumer took every element from the read-ahead and stacked them itself (M1 in
// docs/benchmarks.md). An error in a batch hands over to the element-wise iterator restored at
// that batch's start, which raises it at the same element with the same state.
#include "ops/batched_read_ahead.h"

#include <algorithm>
#include <string>
#include <utility>

#include "ops/batch.h"
#include "ops/slice.h"
#include "spelt/executor.h"
#include "spelt/stage_stats.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "PrefetchIterDataset";

class BatchedReadAheadIterator final : public DatasetIterator {
 public:
  BatchedReadAheadIterator(MapNodePtr parent, ReadOptions options, int64_t batch_size,
                           bool drop_remainder,
                           std::function<std::unique_ptr<DatasetIterator>()> elementwise)
      : parent_(std::move(parent)), length_(parent_->Length()), options_(options),
        threads_(options.num_threads > 0 && options.prefetch_buffer_size > 0),
        batch_size_(batch_size), drop_remainder_(drop_remainder),
        elementwise_(std::move(elementwise)) {
    // prefetch_buffer_size counts elements: read ahead about as many, in whole batches.
    options_.prefetch_buffer_size =
        std::max<int64_t>(1, options_.prefetch_buffer_size / batch_size_);
    Start(0);
  }

  std::optional<Value> Next() override {
    if (fallback_) return fallback_->Next();
    std::optional<Value> batch;
    try {
      batch = batches_->Next();
    } catch (...) {
      std::unique_ptr<DatasetIterator> fallback = elementwise_();
      fallback->SetState(GetState());
      fallback_ = std::move(fallback);
      return fallback_->Next();
    }
    // At the end, the element-wise iterator has consumed the whole parent (a dropped
    // remainder included).
    next_index_ = batch ? std::min(length_, next_index_ + batch_size_) : length_;
    if (batch && !sized_) ReadAheadAtLeast(ValueBytes(*batch));
    return batch;
  }

  State GetState() const override {
    if (fallback_) return fallback_->GetState();
    return PositionState(next_index_);
  }

  void SetState(const State& state) override {
    const int64_t n = StateNextIndex(state, length_, kName);
    fallback_.reset();
    Start(n);
  }

  // The element-wise iterator's state is the same position: both batch a position's index.
  int64_t NextIndexOf(const State& state) const override {
    return BatchesBefore(StateInt(state, kNextIndexKey, kName), batch_size_);
  }
  State StateAtIndex(int64_t index, const State& /*state*/) const override {
    return PositionState(FirstOfBatch(index, batch_size_));
  }

 private:
  void Start(int64_t begin) {
    next_index_ = begin;
    MapNodePtr elements =
        begin == 0 ? parent_ : MakeSliceNode(parent_, begin, length_, /*step=*/1);
    MapNodePtr batches = MakeBatchMapNode(std::move(elements), batch_size_, drop_remainder_, {});
    const int64_t num_batches = batches->Length();
    batches_ = MakeOrderedIterator(num_batches, /*allow_nones=*/false,
                                   threads_ ? MakeThreadPoolExecutor(std::move(batches), options_)
                                            : MakeInlineExecutor(std::move(batches)));
  }

  // Once the first batch's size is known: with threads, reads ahead at least
  // kMinReadAheadBytes of batches (restarting the read-ahead after the first batch, whose few
  // batches in flight are computed again). prefetch_buffer_size counts elements, and Grain's
  // default of 500 is 3 batches of 128: one batch per chunk, so a thread hand-off per batch,
  // which for small batches (100 KB, gathered in 9 us) costs as much as computing them.
  void ReadAheadAtLeast(int64_t batch_bytes) {
    sized_ = true;
    if (!threads_ || batch_bytes <= 0) return;
    const int64_t wanted = (kMinReadAheadBytes + batch_bytes - 1) / batch_bytes;
    if (wanted <= options_.prefetch_buffer_size) return;
    options_.prefetch_buffer_size = wanted;
    Start(next_index_);
  }

  static constexpr int64_t kMinReadAheadBytes = int64_t{4} << 20;

  const MapNodePtr parent_;
  const int64_t length_;
  ReadOptions options_;
  const bool threads_;  // read ahead on the pool; else computed by the consumer
  const int64_t batch_size_;
  const bool drop_remainder_;
  const std::function<std::unique_ptr<DatasetIterator>()> elementwise_;
  int64_t next_index_ = 0;  // parent elements consumed
  bool sized_ = false;       // ReadAheadAtLeast has seen a batch
  std::unique_ptr<DatasetIterator> batches_;
  std::unique_ptr<DatasetIterator> fallback_;  // after an error
};

}  // namespace

std::unique_ptr<DatasetIterator> MakeBatchedReadAheadIterator(
    MapNodePtr parent, ReadOptions options, int64_t batch_size, bool drop_remainder,
    std::function<std::unique_ptr<DatasetIterator>()> elementwise) {
  return std::make_unique<BatchedReadAheadIterator>(std::move(parent), options, batch_size,
                                                    drop_remainder, std::move(elementwise));
}

}  // namespace spelt::internal
