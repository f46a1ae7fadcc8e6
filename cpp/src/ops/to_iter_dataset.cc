// PrefetchIterDataset (Grain's to_iter_dataset): the MapDataset read in index order by the
// ordered core (spelt/executor.h). Pipelines that call no Python read ahead on
// ReadOptions.num_threads threads of the process-wide pool; serial pipelines (see
// DatasetNode::Serial) and num_threads == 0 compute chunks in the calling thread.
// State: {"next_index": n}.
#include "ops/to_iter_dataset.h"
#include "spelt/executor.h"

namespace spelt::internal {
namespace {

class PrefetchNode final : public IterNode {
 public:
  PrefetchNode(MapNodePtr parent, ReadOptions options, bool allow_nones)
      : IterNode({parent}), parent_(std::move(parent)), options_(options),
        allow_nones_(allow_nones) {}
  std::string Name() const override { return "PrefetchIterDataset"; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    const bool threads = !parent_->Serial() && options_.num_threads > 0 &&
                         options_.prefetch_buffer_size > 0;
    return MakeOrderedIterator(parent_->Length(), allow_nones_,
                               threads ? MakeThreadPoolExecutor(parent_, options_)
                                       : MakeInlineExecutor(parent_));
  }

 private:
  MapNodePtr parent_;
  ReadOptions options_;
  bool allow_nones_;
};

}  // namespace

IterNodePtr MakePrefetchNode(MapNodePtr parent, ReadOptions options, bool allow_nones) {
  return std::make_shared<PrefetchNode>(std::move(parent), options, allow_nones);
}

}  // namespace spelt::internal
