// PrefetchIterDataset (Grain's to_iter_dataset): the MapDataset read in index order by the
// ordered core (spelt/executor.h), ahead on ReadOptions.num_threads threads of the
// process-wide pool, as Grain reads with its thread pool; a pipeline's Python code takes the
// GIL on those threads (so I/O and native code that releases the GIL overlap). With
// num_threads == 0 or prefetch_buffer_size == 0, chunks are computed in the calling thread.
// State: {"next_index": n}.
#include "ops/to_iter_dataset.h"

#include <algorithm>

#include "spelt/batched_read_ahead.h"
#include "spelt/executor.h"

namespace spelt::internal {
namespace {

// Whole batches computed by the read-ahead threads (by the consumer where `options` allow no
// threads), about options.prefetch_buffer_size elements ahead in whole batches, and at least
// 4 MiB of batches once the first is seen.
class PoolBatches final : public BatchesAhead {
 public:
  PoolBatches(MapNodePtr parent, ReadOptions options, int64_t batch_size, bool drop_remainder)
      : parent_(std::move(parent)), options_(options),
        threads_(options.num_threads > 0 && options.prefetch_buffer_size > 0),
        batch_size_(batch_size), drop_remainder_(drop_remainder) {
    // prefetch_buffer_size counts elements: read ahead about as many, in whole batches.
    options_.prefetch_buffer_size =
        std::max<int64_t>(1, options_.prefetch_buffer_size / batch_size_);
  }

  std::unique_ptr<DatasetIterator> From(int64_t begin) override {
    MapNodePtr batches = MakeBatchesFromNode(parent_, begin, batch_size_, drop_remainder_);
    const int64_t num_batches = batches->Length();
    std::unique_ptr<ChunkExecutor> executor =
        threads_ ? MakeThreadPoolExecutor(std::move(batches), options_)
                 : MakeInlineExecutor(std::move(batches));
    executor_ = executor.get();
    return MakeOrderedIterator(num_batches, /*allow_nones=*/false, std::move(executor));
  }

  // With threads, reads ahead at least kMinReadAheadBytes of batches from the first batch on,
  // deepening the running read-ahead (ChunkExecutor::SetReadAhead: nothing is computed twice).
  // prefetch_buffer_size counts elements, and Grain's default of 500 is 3 batches of 128: one
  // batch per chunk, so a thread hand-off per batch, which for small batches (100 KB, gathered
  // in 9 us) costs as much as computing them. Starting shallow keeps the first batch as quick
  // as Grain's read-ahead makes it (I2 in docs/benchmarks.md: starting 4 MiB deep put most of
  // a short epoch in flight at once, on 2 cores beside the consumer).
  Sized OnFirstBatch(int64_t batch_bytes) override {
    if (!threads_) return Sized::kGoOn;
    const int64_t wanted = (kMinReadAheadBytes + batch_bytes - 1) / batch_bytes;
    if (wanted > options_.prefetch_buffer_size) {
      options_.prefetch_buffer_size = wanted;  // for From() after a restore too
      executor_->SetReadAhead(wanted);
    }
    return Sized::kGoOn;
  }

  bool AbsorbReadAhead(int64_t batches) override {
    if (!threads_) return false;
    options_.prefetch_buffer_size += batches;
    if (executor_ != nullptr) executor_->SetReadAhead(options_.prefetch_buffer_size);
    return true;
  }

 private:
  static constexpr int64_t kMinReadAheadBytes = int64_t{4} << 20;

  const MapNodePtr parent_;
  ReadOptions options_;
  const bool threads_;  // read ahead on the pool; else computed by the consumer
  const int64_t batch_size_;
  const bool drop_remainder_;
  // The executor of the iterator that From() made last, which the caller keeps while it calls
  // OnFirstBatch (spelt/batched_read_ahead.h).
  ChunkExecutor* executor_ = nullptr;
};

class PrefetchNode final : public IterNode {
 public:
  PrefetchNode(MapNodePtr parent, ReadOptions options, bool allow_nones, bool level)
      : IterNode({parent}), parent_(std::move(parent)), options_(options),
        allow_nones_(allow_nones) {
    if (!level) set_not_a_level();
  }
  std::string Name() const override { return "PrefetchIterDataset"; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return MakeOrderedIterator(parent_->Length(), allow_nones_,
                               Threads() ? MakeThreadPoolExecutor(parent_, options_)
                                         : MakeInlineExecutor(parent_),
                               IteratorName());
  }
  // With elements never None (no filter, no Python), batches are computed whole (gathered
  // by the source, written by the maps): by the threads, or by the consumer without them.
  std::unique_ptr<DatasetIterator> MakeBatchIterator(
      const BatchRequest& request,
      std::function<std::unique_ptr<DatasetIterator>()> elementwise) const override {
    if (parent_->CallsPython() || parent_->Filters() || allow_nones_ || request.none_marker) {
      return nullptr;
    }
    return MakeBatchedReadAheadIterator(
        parent_->Length(), request.batch_size,
        std::make_unique<PoolBatches>(parent_, options_, request.batch_size,
                                      request.drop_remainder),
        std::move(elementwise));
  }

 private:
  // Grain's str() of the iterator, for the filter-threshold messages.
  std::string IteratorName() const {
    return "PrefetchDatasetIterator(read_options=ReadOptions(num_threads=" +
           std::to_string(options_.num_threads) +
           ", prefetch_buffer_size=" + std::to_string(options_.prefetch_buffer_size) +
           "), allow_nones=" + (allow_nones_ ? "True" : "False") + ")";
  }

  bool Threads() const {
    return options_.num_threads > 0 && options_.prefetch_buffer_size > 0;
  }

  MapNodePtr parent_;
  ReadOptions options_;
  bool allow_nones_;
};

}  // namespace

IterNodePtr MakePrefetchNode(MapNodePtr parent, ReadOptions options, bool allow_nones,
                             bool level) {
  return std::make_shared<PrefetchNode>(std::move(parent), options, allow_nones, level);
}

}  // namespace spelt::internal
