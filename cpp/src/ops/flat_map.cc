// FlatMapMapDataset: each parent element becomes up to `max_fan_out` elements, at fixed
// slots (Grain 0.2.18's flatmap.py): element i is split i % max_fan_out of parent element
// i / max_fan_out, None (filtered) where the split has fewer outputs or the parent element is
// filtered. Length: parent length * max_fan_out, kInfiniteLength when that would reach it.
// A split with more than max_fan_out outputs raises std::invalid_argument (Grain's message).
// GetMany() calls fn once per parent element of the chunk (Get() once per index, as Grain).
#include "ops/flat_map.h"

#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class FlatMapNode final : public MapNode {
 public:
  FlatMapNode(MapNodePtr parent, FlatMapFn fn, int64_t max_fan_out, bool calls_python)
      : MapNode({parent}, calls_python, /*filters_self=*/true), parent_(std::move(parent)),
        fn_(std::move(fn)), fan_out_(max_fan_out) {
    const int64_t n = parent_->Length();
    length_ = n >= kInfiniteLength / fan_out_ ? kInfiniteLength : n * fan_out_;
  }
  std::string Name() const override { return "FlatMapMapDataset"; }
  int64_t Length() const override { return length_; }

  std::optional<Value> Get(int64_t index) const override {
    std::optional<Value> element = parent_->Get(index / fan_out_);
    if (!element) return std::nullopt;
    return Pick(Split(std::move(*element)), index % fan_out_);
  }

  void GetMany(std::span<const int64_t> indices, Elements* out) const override {
    std::vector<int64_t> parent_indices;  // one per run of indices with the same parent
    for (const int64_t index : indices) {
      if (parent_indices.empty() || parent_indices.back() != index / fan_out_) {
        parent_indices.push_back(index / fan_out_);
      }
    }
    Elements elements;
    std::exception_ptr error = Capture([&] { parent_->GetMany(parent_indices, &elements); });
    size_t run = 0;
    std::optional<std::vector<Value>> splits;  // of elements[run]
    for (const int64_t index : indices) {
      if (parent_indices[run] != index / fan_out_) {
        ++run;
        splits.reset();
      }
      if (run >= elements.size()) std::rethrow_exception(error);
      if (!elements[run]) {
        out->push_back(std::nullopt);
        continue;
      }
      if (!splits) splits = Split(*elements[run]);
      out->push_back(Pick(*splits, index % fan_out_));
    }
  }

 private:
  std::vector<Value> Split(Value element) const {
    std::vector<Value> splits = fn_(std::move(element));
    if (static_cast<int64_t>(splits.size()) > fan_out_) {
      throw std::invalid_argument(
          "The user-provided FlatMapTransform has a split that exceeds specified max fan-out "
          "size. To address this, you can raise the max fan-out size, but for a max fan-out "
          "size >100, performance may suffer. Please consider preprocessing your data to keep "
          "the max fan-out size reasonable.");
    }
    return splits;
  }

  static std::optional<Value> Pick(const std::vector<Value>& splits, int64_t k) {
    if (k >= static_cast<int64_t>(splits.size())) return std::nullopt;
    return NoneAsFiltered(splits[static_cast<size_t>(k)]);
  }

  MapNodePtr parent_;
  FlatMapFn fn_;
  int64_t fan_out_;
  int64_t length_;
};

}  // namespace

MapNodePtr MakeFlatMapNode(MapNodePtr parent, FlatMapFn fn, int64_t max_fan_out,
                              bool calls_python) {
  return std::make_shared<FlatMapNode>(std::move(parent), std::move(fn), max_fan_out, calls_python);
}

}  // namespace spelt::internal
