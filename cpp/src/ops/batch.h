// Internal: BatchMapDataset and BatchIterDataset (ops/batch.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_BATCH_H_
#define SPELT_SRC_OPS_BATCH_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeBatchMapNode(MapNodePtr parent, int64_t batch_size, bool drop_remainder,
                            BatchFn fn);
IterNodePtr MakeBatchIterNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder,
                              BatchFn fn);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_BATCH_H_
