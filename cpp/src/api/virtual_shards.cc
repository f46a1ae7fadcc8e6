// The virtual-shards handle (spelt/virtual_shards.h): the node of ops/virtual_shards.cc.
#include "spelt/virtual_shards.h"

#include <utility>

#include "ops/virtual_shards.h"

namespace spelt {

IterDataset VirtualShards(std::vector<IterDataset> shards, int64_t num_virtual_shards,
                          int64_t shard_index, int64_t shard_count) {
  std::vector<internal::IterNodePtr> nodes;
  nodes.reserve(shards.size());
  for (const IterDataset& shard : shards) nodes.push_back(shard.node());
  return IterDataset(internal::MakeVirtualShardsNode(std::move(nodes), num_virtual_shards,
                                                     shard_index, shard_count));
}

}  // namespace spelt
