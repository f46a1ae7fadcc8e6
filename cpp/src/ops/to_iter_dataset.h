// Internal: PrefetchIterDataset (to_iter_dataset) over the ordered core (ops/to_iter_dataset.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_TO_ITER_DATASET_H_
#define SPELT_SRC_OPS_TO_ITER_DATASET_H_

#include "core/nodes.h"
#include "spelt/read_options.h"

namespace spelt::internal {

IterNodePtr MakePrefetchNode(MapNodePtr parent, ReadOptions options, bool allow_nones,
                             bool level = true);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_TO_ITER_DATASET_H_
