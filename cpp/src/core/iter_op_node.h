// Internal: the node class shared by IterDataset ops whose iterator wraps exactly one parent
// iterator (map, random_map, map_with_index, filter, limit, repeat, rebatch, window_shuffle,
// cache).
#ifndef SPELT_SRC_CORE_ITER_OP_NODE_H_
#define SPELT_SRC_CORE_ITER_OP_NODE_H_

#include <functional>
#include <memory>
#include <string>

#include "core/nodes.h"

namespace spelt::internal {

// One node class for those ops: each supplies a factory that wraps the parent's iterator.
class IterOpNode final : public IterNode {
 public:
  using Factory =
      std::function<std::unique_ptr<DatasetIterator>(std::unique_ptr<DatasetIterator>)>;
  IterOpNode(IterNodePtr parent, std::string name, Factory factory)
      : IterNode({parent}), parent_(std::move(parent)), name_(std::move(name)),
        factory_(std::move(factory)) {}
  std::string Name() const override { return name_; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return factory_(parent_->MakeIterator());
  }

 private:
  IterNodePtr parent_;
  std::string name_;
  Factory factory_;
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_CORE_ITER_OP_NODE_H_
