// Internal: factories for the node classes, one transformation per .cc file.
// The public handles in dataset.h (MapDataset, IterDataset) call these.
#ifndef SPELT_SRC_CORE_NODES_H_
#define SPELT_SRC_CORE_NODES_H_

#include <memory>
#include <optional>
#include <vector>

#include "spelt/dataset.h"
#include "spelt/sampler.h"

namespace spelt::internal {

using MapNodePtr = std::shared_ptr<const MapNode>;
using IterNodePtr = std::shared_ptr<const IterNode>;

// source.cc
MapNodePtr MakeSourceNode(std::shared_ptr<const RandomAccessSource> source);
// seed.cc
MapNodePtr MakeSeedMapNode(MapNodePtr parent, uint32_t seed);
IterNodePtr MakeSeedIterNode(IterNodePtr parent, uint32_t seed);
// shuffle.cc
MapNodePtr MakeShuffleNode(MapNodePtr parent, uint32_t seed);
// slice.cc
MapNodePtr MakeSliceNode(MapNodePtr parent, int64_t start, int64_t stop, int64_t step);
// repeat.cc
MapNodePtr MakeRepeatNode(MapNodePtr parent, std::optional<int64_t> num_epochs,
                          bool reseed_each_epoch);
// map.cc
MapNodePtr MakeMapNode(MapNodePtr parent, MapFn fn, bool serial);
MapNodePtr MakeRandomMapNode(MapNodePtr parent, RandomMapFn fn, uint32_t seed, bool serial);
MapNodePtr MakeMapWithIndexNode(MapNodePtr parent, MapWithIndexFn fn, bool serial);
// filter.cc
MapNodePtr MakeFilterNode(MapNodePtr parent, FilterFn fn, bool serial);
// batch.cc
MapNodePtr MakeBatchMapNode(MapNodePtr parent, int64_t batch_size, bool drop_remainder,
                            BatchFn fn);
IterNodePtr MakeBatchIterNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder,
                              BatchFn fn);
// shard.cc (sharding of samplers, spelt/sampler.h)
MapNodePtr MakeShardNode(MapNodePtr parent, const ShardOptions& options);
// concatenate.cc
MapNodePtr MakeConcatenateNode(std::vector<MapNodePtr> parents);
// mix.cc
MapNodePtr MakeMixNode(std::vector<MapNodePtr> parents,
                       const std::optional<std::vector<double>>& weights);
// to_iter_dataset.cc
IterNodePtr MakePrefetchNode(MapNodePtr parent, ReadOptions options, bool allow_nones);
// iter_map.cc
IterNodePtr MakeIterMapNode(IterNodePtr parent, MapFn fn);
IterNodePtr MakeIterRandomMapNode(IterNodePtr parent, RandomMapFn fn, uint32_t seed);
IterNodePtr MakeIterMapWithIndexNode(IterNodePtr parent, MapWithIndexFn fn);
// iter_filter.cc
IterNodePtr MakeIterFilterNode(IterNodePtr parent, FilterFn fn);
// flat_map.cc
IterNodePtr MakeFlatMapNode(IterNodePtr parent, FlatMapFn fn);

// Grain's convention on MapDatasets: a None element is a filtered-out element.
inline std::optional<Value> NoneAsFiltered(Value v) {
  if (v.is_none()) return std::nullopt;
  return v;
}

// state.cc: reading fields of a State with clear errors (std::invalid_argument naming the
// node and the field).
const State& StateField(const State& state, const char* field, const char* node);
int64_t StateInt(const State& state, const char* field, const char* node);

}  // namespace spelt::internal

#endif  // SPELT_SRC_CORE_NODES_H_
