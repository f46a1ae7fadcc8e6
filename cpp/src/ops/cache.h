// Internal: CacheIterDataset (ops/cache.cc). IterDataset::Cache calls this factory.
#ifndef SPELT_SRC_OPS_CACHE_H_
#define SPELT_SRC_OPS_CACHE_H_

#include "core/nodes.h"

namespace spelt::internal {

IterNodePtr MakeCacheNode(IterNodePtr parent);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_CACHE_H_
