// Internal: ConcatenateMapDataset (ops/concatenate.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_CONCATENATE_H_
#define SPELT_SRC_OPS_CONCATENATE_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeConcatenateNode(std::vector<MapNodePtr> parents);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_CONCATENATE_H_
