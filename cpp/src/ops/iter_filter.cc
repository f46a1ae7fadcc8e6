// FilterIterDataset (Grain's filter.py on an IterDataset): elements for which fn is false are
// skipped, and the skipped ratio is checked against the filter thresholds
// (spelt/dataset_options.h). State: the parent's, passed through.
#include "ops/iter_filter.h"
#include "core/iter_op_node.h"
#include "exec/filter_threshold.h"

namespace spelt::internal {
namespace {

class FilterIterator final : public DatasetIterator {
 public:
  FilterIterator(std::unique_ptr<DatasetIterator> parent, FilterFn fn,
                 const std::string& transform_name)
      : parent_(std::move(parent)), fn_(std::move(fn)),
        checker_("FilterDatasetIterator(transform=" + transform_name + ")") {}
  std::optional<Value> Next() override {
    for (;;) {
      std::optional<Value> v = parent_->Next();
      if (!v) return v;
      const bool passed = fn_(*v);
      checker_.Check(passed);
      if (passed) return v;
    }
  }
  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override { return parent_->GetState(); }
  void SetState(const State& state) override { parent_->SetState(state); }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  FilterFn fn_;
  FilterThresholdChecker checker_;
};

}  // namespace

IterNodePtr MakeIterFilterNode(IterNodePtr parent, FilterFn fn, std::string transform_name) {
  return std::make_shared<IterOpNode>(
      std::move(parent), "FilterIterDataset",
      [fn = std::move(fn), name = std::move(transform_name)](auto p) {
        return std::make_unique<FilterIterator>(std::move(p), fn, name);
      });
}

}  // namespace spelt::internal
