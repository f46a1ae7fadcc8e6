// SliceMapDataset: Python slice semantics over one epoch; epoch e of the slice reads epoch e
// of the parent, as Grain 0.2.13+ does (grain slice.py; see docs/compatibility.md).
#include <stdexcept>

#include "ops/slice.h"
#include "core/range_length.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class SliceNode final : public IndexMapNode {
 public:
  SliceNode(MapNodePtr parent, int64_t start, int64_t stop, int64_t step)
      : IndexMapNode(std::move(parent)), start_(start), step_(step),
        parent_length_(this->parent()->Length()) {
    length_ = RangeLength(start, stop, step);
  }
  std::string Name() const override { return "SliceMapDataset"; }
  int64_t Length() const override { return length_; }

 private:
  int64_t ParentIndex(int64_t index) const override {
    if (length_ == 0) throw std::out_of_range("slice: index into an empty slice");
    const int64_t epoch = index / length_;
    const int64_t offset = index % length_;
    return start_ + offset * step_ + epoch * parent_length_;
  }

  int64_t start_, step_, parent_length_, length_;
};

}  // namespace

MapNodePtr MakeSliceNode(MapNodePtr parent, int64_t start, int64_t stop, int64_t step) {
  return std::make_shared<SliceNode>(std::move(parent), start, stop, step);
}

}  // namespace spelt::internal
