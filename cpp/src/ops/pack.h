// Internal: FirstFitPackIterDataset, BestFitPackIterDataset and PackAndBatchOperation
// (ops/pack.cc). Pack (spelt/packing.h) calls this factory.
#ifndef SPELT_SRC_OPS_PACK_H_
#define SPELT_SRC_OPS_PACK_H_

#include "core/nodes.h"
#include "spelt/packing_options.h"

namespace spelt::internal {

// Throws std::invalid_argument on invalid options (see Pack).
IterNodePtr MakePackNode(IterNodePtr parent, PackOptions options);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_PACK_H_
