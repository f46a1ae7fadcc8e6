// Internal: FilterMapDataset (ops/filter.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_FILTER_H_
#define SPELT_SRC_OPS_FILTER_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeFilterNode(MapNodePtr parent, FilterFn fn, bool calls_python);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_FILTER_H_
