// spelt/virtual_shards.h: one host's stream of a pipeline cut into virtual shards
// (python/spelt/virtual_shards.py, docs/multihost.md "Resuming any pipeline: virtual shards").
//
// Of `shard_count` M hosts, host `shard_index` h owns the virtual shards v = h, h + M, ... < K
// (K = `num_virtual_shards`); `shards` are their pipelines, in that order. The iterator reads
// them round robin, one element of each in turn, skipping (and dropping from the turn) a shard
// once it is exhausted; an error of a shard's Next() propagates and the same shard is asked
// again on the next call. Switching between shards costs no more than an index increment.
//
// State (Python's json of it; key order as written):
//   {"num_virtual_shards": K, "shard_index": h, "shard_count": M, "next_shard": v,
//    "shards": {"<v>": {"exhausted": 0 or 1, "state": shard v's iterator state}, ...}}
// where "next_shard" is the shard whose element comes next (-1 when all are exhausted).
// SetState takes such a state of this host (resumes exactly), or one holding the shards of
// every host (spelt._checkpoint_io.merge_virtual_shard_states, any host count: each shard
// resumes where it was, round robin from "next_shard" if this host owns it, else from the
// lowest live shard). It throws std::invalid_argument if the state has other keys, another
// K, or lacks one of this host's shards (naming them).
//
// Thread-safety: as every dataset (spelt/dataset.h): datasets are immutable, an iterator is
// used by one thread at a time.
#ifndef SPELT_VIRTUAL_SHARDS_H_
#define SPELT_VIRTUAL_SHARDS_H_

#include <cstdint>
#include <vector>

#include "spelt/dataset.h"

namespace spelt {

// Throws std::invalid_argument unless 0 <= shard_index < shard_count <= num_virtual_shards
// and `shards` holds exactly the owned shards' pipelines.
IterDataset VirtualShards(std::vector<IterDataset> shards, int64_t num_virtual_shards,
                          int64_t shard_index, int64_t shard_count);

}  // namespace spelt

#endif  // SPELT_VIRTUAL_SHARDS_H_
