// PrefetchIterDataset (Grain's to_iter_dataset): the MapDataset read in index order by the
// ordered core (spelt/executor.h), ahead on ReadOptions.num_threads threads of the
// process-wide pool, as Grain reads with its thread pool; a pipeline's Python code takes the
// GIL on those threads (so I/O and native code that releases the GIL overlap). With
// num_threads == 0 or prefetch_buffer_size == 0, chunks are computed in the calling thread.
// State: {"next_index": n}.
#include "ops/to_iter_dataset.h"
#include "ops/batched_read_ahead.h"
#include "spelt/executor.h"

namespace spelt::internal {
namespace {

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
      int64_t batch_size, bool drop_remainder,
      std::function<std::unique_ptr<DatasetIterator>()> elementwise) const override {
    if (parent_->CallsPython() || parent_->Filters() || allow_nones_) return nullptr;
    return MakeBatchedReadAheadIterator(parent_, options_, batch_size, drop_remainder,
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
