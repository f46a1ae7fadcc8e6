// Internal: ReindexMapDataset (ops/reindex.cc). The public handles of spelt/dataset.h call this
// factory.
#ifndef SPELT_SRC_OPS_REINDEX_H_
#define SPELT_SRC_OPS_REINDEX_H_

#include <cstdint>
#include <vector>

#include "core/nodes.h"

namespace spelt::internal {

// Element k is the parent's element indices[k % indices.size()]. `indices` are parent indices
// >= 0 (the public handle resolves negative ones); any value reads that parent index, later
// epochs included.
MapNodePtr MakeReindexNode(MapNodePtr parent, std::vector<int64_t> indices);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_REINDEX_H_
