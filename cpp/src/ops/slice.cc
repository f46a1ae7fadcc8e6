// SliceMapDataset: Python slice semantics over one epoch. The slice is a fixed subset: every
// epoch of the slice reads the same parent indices (those of the parent's first epoch), so
// shuffle().slice().repeat() never shows an element outside the slice. Grain 0.2.18 reads
// epoch e of the parent for epoch e of the slice and leaks other elements (grain#1200); see
// docs/compatibility.md.
#include <stdexcept>

#include "ops/slice.h"
#include "base/range_length.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class SliceNode final : public IndexMapNode {
 public:
  SliceNode(MapNodePtr parent, int64_t start, int64_t stop, int64_t step)
      : IndexMapNode(std::move(parent)), start_(start), step_(step) {
    length_ = RangeLength(start, stop, step);
  }
  std::string Name() const override { return "SliceMapDataset"; }
  int64_t Length() const override { return length_; }

 private:
  int64_t ParentIndex(int64_t index) const override {
    if (length_ == 0) throw std::out_of_range("slice: index into an empty slice");
    return start_ + (index % length_) * step_;
  }

  int64_t start_, step_, length_;
};

}  // namespace

MapNodePtr MakeSliceNode(MapNodePtr parent, int64_t start, int64_t stop, int64_t step) {
  return std::make_shared<SliceNode>(std::move(parent), start, stop, step);
}

}  // namespace spelt::internal
