// Internal: the node of spelt/virtual_shards.h's VirtualShards (ops/virtual_shards.cc), whose
// order, state and errors that header describes.
#ifndef SPELT_SRC_OPS_VIRTUAL_SHARDS_H_
#define SPELT_SRC_OPS_VIRTUAL_SHARDS_H_

#include <cstdint>
#include <vector>

#include "core/nodes.h"

namespace spelt::internal {

// Host `shard_index` of `shard_count`'s round robin over `shards`, its virtual shards' nodes.
// Throws std::invalid_argument as VirtualShards does.
IterNodePtr MakeVirtualShardsNode(std::vector<IterNodePtr> shards, int64_t num_virtual_shards,
                                  int64_t shard_index, int64_t shard_count);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_VIRTUAL_SHARDS_H_
