// Internal: FlatMapIterDataset (ops/iter_flat_map.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_ITER_FLAT_MAP_H_
#define SPELT_SRC_OPS_ITER_FLAT_MAP_H_

#include "core/nodes.h"

namespace spelt::internal {

IterNodePtr MakeIterFlatMapNode(IterNodePtr parent, FlatMapFn fn);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_ITER_FLAT_MAP_H_
