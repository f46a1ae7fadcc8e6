// FilterIterDataset (Grain's filter.py on an IterDataset): elements for which fn is false are
// skipped. State: the parent's, passed through.
#include "ops/iter_filter.h"
#include "core/iter_op_node.h"

namespace spelt::internal {
namespace {

class FilterIterator final : public DatasetIterator {
 public:
  FilterIterator(std::unique_ptr<DatasetIterator> parent, FilterFn fn)
      : parent_(std::move(parent)), fn_(std::move(fn)) {}
  std::optional<Value> Next() override {
    for (;;) {
      std::optional<Value> v = parent_->Next();
      if (!v || fn_(*v)) return v;
    }
  }
  State GetState() const override { return parent_->GetState(); }
  void SetState(const State& state) override { parent_->SetState(state); }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  FilterFn fn_;
};

}  // namespace

IterNodePtr MakeIterFilterNode(IterNodePtr parent, FilterFn fn) {
  return std::make_shared<IterOpNode>(std::move(parent), "FilterIterDataset",
                                      [fn = std::move(fn)](auto p) {
                                        return std::make_unique<FilterIterator>(std::move(p), fn);
                                      });
}

}  // namespace spelt::internal
