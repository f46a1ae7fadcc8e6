// FilterMapDataset: keeps elements for which fn returns true; others become nullopt (None),
// which to_iter_dataset skips (Grain's filter.py). A chunk reads its parent elements with one
// GetMany, then calls fn per element in index order.
#include "ops/filter.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class FilterNode final : public ElementwiseNode {
 public:
  FilterNode(MapNodePtr parent, FilterFn fn, bool calls_python)
      : ElementwiseNode(std::move(parent), calls_python, /*filters=*/true), fn_(std::move(fn)) {}
  std::string Name() const override { return "FilterMapDataset"; }

 private:
  std::optional<Value> Apply(int64_t, std::optional<Value> v) const override {
    if (!v || !fn_(*v)) return std::nullopt;
    return v;
  }

  FilterFn fn_;
};

}  // namespace

MapNodePtr MakeFilterNode(MapNodePtr parent, FilterFn fn, bool calls_python) {
  return std::make_shared<FilterNode>(std::move(parent), std::move(fn), calls_python);
}

}  // namespace spelt::internal
