// Internal: SliceMapDataset (ops/slice.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_SLICE_H_
#define SPELT_SRC_OPS_SLICE_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeSliceNode(MapNodePtr parent, int64_t start, int64_t stop, int64_t step);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_SLICE_H_
