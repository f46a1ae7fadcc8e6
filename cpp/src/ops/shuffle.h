// Internal: ShuffleMapDataset: global shuffle by index_shuffle (ops/shuffle.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_SHUFFLE_H_
#define SPELT_SRC_OPS_SHUFFLE_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeShuffleNode(MapNodePtr parent, uint32_t seed);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_SHUFFLE_H_
