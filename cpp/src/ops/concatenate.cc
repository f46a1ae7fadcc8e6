// ConcatenateMapDataset: the parents' elements one after the other (Grain mix.py,
// _ConcatSelectionMap). Index i falls in epoch e = i / Length(); the offset within the epoch
// picks the parent by bisect_right over cumulative sizes, and epoch e of the result reads
// epoch e of that parent (index + e * len(parent)).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "ops/concatenate.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class ConcatenateNode final : public RoutedNode {
 public:
  explicit ConcatenateNode(std::vector<MapNodePtr> parents) : RoutedNode(std::move(parents)) {
    cumulative_.reserve(inputs().size() + 1);
    cumulative_.push_back(0);
    for (size_t i = 0; i < inputs().size(); ++i) {
      const int64_t n = inputs()[i]->Length();
      if (n >= kInfiniteLength) {
        throw std::invalid_argument("Cannot concatenate infinite datasets. Dataset at index " +
                                    std::to_string(i) + " (" + inputs()[i]->Name() +
                                    ") is infinite.");
      }
      sizes_.push_back(n);
      if (cumulative_.back() > kInfiniteLength - 1 - n) {
        throw std::invalid_argument("concatenate: total length overflows int64");
      }
      cumulative_.push_back(cumulative_.back() + n);
    }
  }
  std::string Name() const override { return "ConcatenateMapDataset"; }
  int64_t Length() const override { return cumulative_.back(); }

 private:
  Route RouteOf(int64_t index) const override {
    const int64_t length = Length();
    if (length == 0) throw std::out_of_range("concatenate: index into an empty dataset");
    const int64_t epoch = index / length;
    const int64_t offset = index % length;
    // bisect_right(cumulative, offset) - 1: skips empty parents.
    const size_t d = static_cast<size_t>(
        std::upper_bound(cumulative_.begin(), cumulative_.end(), offset) - cumulative_.begin() - 1);
    return {d, offset - cumulative_[d] + epoch * sizes_[d]};
  }

  std::vector<int64_t> sizes_;
  std::vector<int64_t> cumulative_;
};

}  // namespace

MapNodePtr MakeConcatenateNode(std::vector<MapNodePtr> parents) {
  return std::make_shared<ConcatenateNode>(std::move(parents));
}

}  // namespace spelt::internal
