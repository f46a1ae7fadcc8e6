// ReindexMapDataset: a MapDataset read at a sequence of parent indices (Grain's
// MapDataset.slice(Sequence[int]), upstream 1a709b1). Like SliceMapDataset (ops/slice.cc) it is
// a fixed subset: every epoch of it reads the same parent indices, so element k is the parent's
// element indices[k % n] in every epoch (upstream reads indices[k % n] + (k / n) * len(parent),
// i.e. later parent epochs; see docs/compatibility.md). A chunk of indices becomes one GetMany
// of the parent (IndexMapNode).
#include "ops/reindex.h"

#include <memory>
#include <stdexcept>
#include <utility>

#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class ReindexNode final : public IndexMapNode {
 public:
  ReindexNode(MapNodePtr parent, std::vector<int64_t> indices)
      : IndexMapNode(std::move(parent)), indices_(std::move(indices)) {}
  std::string Name() const override { return "ReindexMapDataset"; }
  int64_t Length() const override { return static_cast<int64_t>(indices_.size()); }

 private:
  int64_t ParentIndex(int64_t index) const override {
    if (indices_.empty()) throw std::out_of_range("slice: index into an empty sequence of indices");
    return indices_[static_cast<size_t>(index % Length())];
  }

  const std::vector<int64_t> indices_;
};

}  // namespace

MapNodePtr MakeReindexNode(MapNodePtr parent, std::vector<int64_t> indices) {
  return std::make_shared<ReindexNode>(std::move(parent), std::move(indices));
}

}  // namespace spelt::internal
