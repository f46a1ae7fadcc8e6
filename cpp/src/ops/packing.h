// Internal: the sequence-packing operations of spelt/packing.h, whose Pack and ConcatThenSplit
// (api/packing.cc) call these factories.
#ifndef SPELT_SRC_OPS_PACKING_H_
#define SPELT_SRC_OPS_PACKING_H_

#include "core/nodes.h"
#include "spelt/packing_options.h"

namespace spelt::internal {

// FirstFitPackIterDataset, BestFitPackIterDataset and PackAndBatchOperation (ops/pack.cc).
// Throws std::invalid_argument on invalid options (see Pack).
IterNodePtr MakePackNode(IterNodePtr parent, PackOptions options);

// ConcatThenSplitIterDataset (ops/concat_then_split.cc). Throws std::invalid_argument on
// invalid options (see ConcatThenSplit).
IterNodePtr MakeConcatThenSplitNode(IterNodePtr parent, ConcatThenSplitOptions options);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_PACKING_H_
