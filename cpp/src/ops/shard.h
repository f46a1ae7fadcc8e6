// Internal: ShardMapDataset: the sharding of samplers (spelt/sampler.h) (ops/shard.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_SHARD_H_
#define SPELT_SRC_OPS_SHARD_H_

#include "core/nodes.h"
#include "spelt/sampler.h"

namespace spelt::internal {

MapNodePtr MakeShardNode(MapNodePtr parent, const ShardOptions& options);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_SHARD_H_
