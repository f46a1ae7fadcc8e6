// Internal: FilterIterDataset (ops/iter_filter.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_ITER_FILTER_H_
#define SPELT_SRC_OPS_ITER_FILTER_H_

#include "core/nodes.h"

namespace spelt::internal {

IterNodePtr MakeIterFilterNode(IterNodePtr parent, FilterFn fn);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_ITER_FILTER_H_
