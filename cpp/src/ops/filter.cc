// FilterMapDataset: keeps elements for which fn returns true; others become nullopt (None),
// which to_iter_dataset skips (Grain's filter.py).
#include "core/nodes.h"

namespace spelt::internal {
namespace {

class FilterNode final : public MapNode {
 public:
  FilterNode(MapNodePtr parent, FilterFn fn, bool serial)
      : MapNode({parent}, serial, /*filters_self=*/true), parent_(std::move(parent)), fn_(std::move(fn)) {}
  std::string Name() const override { return "FilterMapDataset"; }
  int64_t Length() const override { return parent_->Length(); }
  std::optional<Value> Get(int64_t index) const override {
    std::optional<Value> v = parent_->Get(index);
    if (!v || !fn_(*v)) return std::nullopt;
    return v;
  }

 private:
  MapNodePtr parent_;
  FilterFn fn_;
};

}  // namespace

MapNodePtr MakeFilterNode(MapNodePtr parent, FilterFn fn, bool serial) {
  return std::make_shared<FilterNode>(std::move(parent), std::move(fn), serial);
}

}  // namespace spelt::internal
