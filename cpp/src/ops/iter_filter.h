// Internal: FilterIterDataset (ops/iter_filter.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_ITER_FILTER_H_
#define SPELT_SRC_OPS_ITER_FILTER_H_

#include <string>

#include "core/nodes.h"

namespace spelt::internal {

// `transform_name` names the filter in the threshold messages (spelt/dataset_options.h).
IterNodePtr MakeIterFilterNode(IterNodePtr parent, FilterFn fn, std::string transform_name);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_ITER_FILTER_H_
