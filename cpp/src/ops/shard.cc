// ShardMapDataset: this shard's contiguous block of the parent (Grain's even_split sharding),
// epoch-aware: index i of epoch e reads the parent's block in its epoch e.
#include <tuple>

#include "ops/shard.h"
#include "ops/get_many.h"
#include "spelt/shard_options.h"

namespace spelt::internal {
namespace {

// This shard's contiguous block of the parent, epoch-aware (Grain's _ShardMapDataset).
class ShardNode final : public IndexMapNode {
 public:
  ShardNode(MapNodePtr parent, const ShardOptions& options)
      : IndexMapNode(std::move(parent)), parent_length_(this->parent()->Length()) {
    std::tie(start_, end_) = EvenSplit(parent_length_, options);
  }
  std::string Name() const override { return "ShardMapDataset"; }
  int64_t Length() const override { return end_ - start_; }

 private:
  int64_t ParentIndex(int64_t index) const override {
    const int64_t length = Length();
    if (length == 0) throw std::out_of_range("shard: index into an empty shard");
    return (index / length) * parent_length_ + index % length + start_;
  }

  int64_t parent_length_, start_ = 0, end_ = 0;
};

}  // namespace

MapNodePtr MakeShardNode(MapNodePtr parent, const ShardOptions& options) {
  return std::make_shared<ShardNode>(std::move(parent), options);
}

}  // namespace spelt::internal
