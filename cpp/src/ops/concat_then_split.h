// Internal: ConcatThenSplitIterDataset (ops/concat_then_split.cc). ConcatThenSplit
// (spelt/packing.h) calls this factory.
#ifndef SPELT_SRC_OPS_CONCAT_THEN_SPLIT_H_
#define SPELT_SRC_OPS_CONCAT_THEN_SPLIT_H_

#include "core/nodes.h"
#include "spelt/packing_options.h"

namespace spelt::internal {

// Throws std::invalid_argument on invalid options (see ConcatThenSplit).
IterNodePtr MakeConcatThenSplitNode(IterNodePtr parent, ConcatThenSplitOptions options);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_CONCAT_THEN_SPLIT_H_
