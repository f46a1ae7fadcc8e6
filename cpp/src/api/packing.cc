// The packing handles (spelt/packing.h): dispatch to the node factories of ops/pack.cc and
// ops/concat_then_split.cc, which check the options.
#include "spelt/packing.h"

#include <utility>

#include "ops/packing.h"

namespace spelt {

IterDataset Pack(const IterDataset& parent, PackOptions options) {
  return IterDataset(internal::MakePackNode(parent.node(), std::move(options)));
}

IterDataset ConcatThenSplit(const IterDataset& parent, ConcatThenSplitOptions options) {
  return IterDataset(internal::MakeConcatThenSplitNode(parent.node(), std::move(options)));
}

}  // namespace spelt
