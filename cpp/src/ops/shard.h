// Internal: ShardMapDataset, this shard's contiguous block of its parent (spelt/shard_options.h;
// ops/shard.cc), made by IndexSampler (sampling/index_sampler.cc).
#ifndef SPELT_SRC_OPS_SHARD_H_
#define SPELT_SRC_OPS_SHARD_H_

#include "core/nodes.h"
#include "spelt/shard_options.h"

namespace spelt::internal {

MapNodePtr MakeShardNode(MapNodePtr parent, const ShardOptions& options);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_SHARD_H_
