// Internal: WindowShuffleMapDataset and WindowShuffleIterDataset (ops/window_shuffle.cc). The
// public handles of spelt/dataset.h call these factories.
#ifndef SPELT_SRC_OPS_WINDOW_SHUFFLE_H_
#define SPELT_SRC_OPS_WINDOW_SHUFFLE_H_

#include "core/nodes.h"

namespace spelt::internal {

// REQUIRES: window_size > 0 (checked by the public handles).
MapNodePtr MakeWindowShuffleMapNode(MapNodePtr parent, int64_t window_size, uint32_t seed);
IterNodePtr MakeWindowShuffleIterNode(IterNodePtr parent, int64_t window_size, uint32_t seed);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_WINDOW_SHUFFLE_H_
