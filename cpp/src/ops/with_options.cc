// ds.seed(s): a pass-through node that carries the seed for default-seed derivation
// (Grain's WithOptionsMapDataset / WithOptionsIterDataset with a seed). An IterDataset's
// WithOptions() is the same node without a seed: one more level between a seed and the
// random transformations that derive from it, as Grain's WithOptionsIterDataset is.
#include "ops/with_options.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class WithOptionsMapNode final : public MapNode {
 public:
  WithOptionsMapNode(MapNodePtr parent, std::vector<uint32_t> seed)
      : MapNode({parent}), parent_(std::move(parent)) {
    set_seed_words(std::move(seed));
  }
  std::string Name() const override { return "WithOptionsMapDataset"; }
  int64_t Length() const override { return parent_->Length(); }
  std::optional<Value> Get(int64_t index) const override { return parent_->Get(index); }
  std::optional<Value> GetStacked(std::span<const int64_t> indices) const override {
    return parent_->GetStacked(indices);
  }
  void GetMany(std::span<const int64_t> indices, Elements* out) const override {
    parent_->GetMany(indices, out);
  }

 private:
  MapNodePtr parent_;
};

class WithOptionsIterNode final : public IterNode {
 public:
  WithOptionsIterNode(IterNodePtr parent, std::optional<std::vector<uint32_t>> seed)
      : IterNode({parent}), parent_(std::move(parent)) {
    if (seed) set_seed_words(std::move(*seed));
  }
  std::string Name() const override { return "WithOptionsIterDataset"; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return parent_->MakeIterator();
  }
  std::unique_ptr<DatasetIterator> MakeBatchIterator(
      const BatchRequest& request,
      std::function<std::unique_ptr<DatasetIterator>()> elementwise) const override {
    return parent_->MakeBatchIterator(request, std::move(elementwise));
  }

 private:
  IterNodePtr parent_;
};

}  // namespace

MapNodePtr MakeWithOptionsMapNode(MapNodePtr parent, std::vector<uint32_t> seed) {
  return std::make_shared<WithOptionsMapNode>(std::move(parent), std::move(seed));
}

IterNodePtr MakeWithOptionsIterNode(IterNodePtr parent,
                                    std::optional<std::vector<uint32_t>> seed) {
  return std::make_shared<WithOptionsIterNode>(std::move(parent), std::move(seed));
}

}  // namespace spelt::internal
