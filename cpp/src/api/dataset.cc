// The public dataset handles (spelt/dataset.h): argument checks, seeds (spelt/seeds.h), and
// dispatch to the node factories of cpp/src/ops/.
#include "spelt/dataset.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "core/nodes.h"
#include "exec/filter_threshold.h"
#include "ops/batch.h"
#include "ops/cache.h"
#include "ops/concatenate.h"
#include "ops/filter.h"
#include "ops/iter_flat_map.h"
#include "ops/flat_map.h"
#include "ops/interleave.h"
#include "ops/iter_filter.h"
#include "ops/iter_map.h"
#include "ops/iter_mix.h"
#include "ops/iter_repeat.h"
#include "ops/limit.h"
#include "ops/map.h"
#include "ops/mix.h"
#include "ops/rebatch.h"
#include "ops/reindex.h"
#include "ops/repeat.h"
#include "ops/with_options.h"
#include "ops/shuffle.h"
#include "ops/slice.h"
#include "ops/thread_prefetch.h"
#include "ops/source_dataset.h"
#include "ops/to_iter_dataset.h"
#include "ops/window_shuffle.h"
#include "spelt/seeds.h"
#include "ops/zip.h"

namespace spelt {
namespace {

using internal::IterNodePtr;
using internal::MapNodePtr;

// Grain's message for MapDataset.batch over a node that may discard elements, naming the first
// discarding ancestor found as Grain searches (depth first, last parent first).
std::string BatchAfterDiscardMessage(const DatasetNode& node) {
  std::vector<const DatasetNode*> to_check{&node};
  std::string what = "`MapDataset.filter` because `filter`";
  while (!to_check.empty()) {
    const DatasetNode* next = to_check.back();
    to_check.pop_back();
    if (next->Name() == "FilterMapDataset") break;
    if (next->Name() == "FlatMapMapDataset") {
      what = "`FlatMapMapDataset` because `FlatMapMapDataset`";
      break;
    }
    for (const auto& p : next->parents()) to_check.push_back(p.get());
  }
  return "`MapDataset.batch` can not follow " + what +
         " can discard elements. Convert `MapDataset` to `IterDataset` with "
         "`to_iter_dataset()` before calling `batch`.";
}

void CheckPositive(int64_t value, const char* what) {
  if (value <= 0) {
    throw std::invalid_argument(std::string(what) + " must be positive, got " +
                                std::to_string(value));
  }
}

}  // namespace

MapDataset::MapDataset(std::shared_ptr<const MapNode> node) : node_(std::move(node)) {
  if (!node_) throw std::invalid_argument("MapDataset: null node");
}

MapDataset MapDataset::Source(std::shared_ptr<const RandomAccessSource> source) {
  if (!source) throw std::invalid_argument("MapDataset::Source: null source");
  return MapDataset(internal::MakeSourceNode(std::move(source)));
}

MapDataset MapDataset::Concatenate(std::vector<MapDataset> datasets) {
  std::vector<MapNodePtr> nodes;
  for (auto& d : datasets) nodes.push_back(d.node());
  return MapDataset(internal::MakeConcatenateNode(std::move(nodes)));
}

MapDataset MapDataset::Mix(std::vector<MapDataset> datasets,
                           std::optional<std::vector<double>> weights) {
  std::vector<MapNodePtr> nodes;
  for (auto& d : datasets) nodes.push_back(d.node());
  return MapDataset(internal::MakeMixNode(std::move(nodes), weights));
}

MapDataset MapDataset::Zip(std::vector<MapDataset> datasets) {
  std::vector<MapNodePtr> nodes;
  for (auto& d : datasets) nodes.push_back(d.node());
  return MapDataset(internal::MakeZipMapNode(std::move(nodes)));
}

MapDataset MapDataset::Range(int64_t start, int64_t stop, int64_t step) {
  return Source(std::make_shared<RangeSource>(start, stop, step));
}

std::optional<Value> MapDataset::Get(int64_t index) const {
  if (index < 0) {
    throw std::out_of_range("MapDataset: negative index " + std::to_string(index));
  }
  return node_->Get(index);
}

MapDataset MapDataset::Seed(AnySeed seed) const {
  return MapDataset(internal::MakeWithOptionsMapNode(node_, seed.words()));
}

MapDataset MapDataset::Shuffle(std::optional<int64_t> seed) const {
  return MapDataset(internal::MakeShuffleNode(node_, ResolveSeed(seed, *node_, "shuffle")));
}

MapDataset MapDataset::Slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                             std::optional<int64_t> step) const {
  // Python's slice.indices(length).
  const int64_t length = Length();
  const int64_t st = step.value_or(1);
  if (st == 0) throw std::invalid_argument("slice: step must not be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += length;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= length) {
      x = st < 0 ? length - 1 : length;
    }
    return x;
  };
  int64_t b = clamp(start, st < 0 ? length - 1 : 0);
  int64_t e = clamp(stop, st < 0 ? -1 : length);
  return MapDataset(internal::MakeSliceNode(node_, b, e, st));
}

MapDataset MapDataset::Reindex(std::vector<int64_t> indices) const {
  const int64_t length = Length();
  for (size_t k = 0; k < indices.size(); ++k) {
    int64_t& index = indices[k];
    if (index >= 0) continue;
    if (index < -length) {
      throw std::out_of_range("slice: index " + std::to_string(index) + " at position " +
                              std::to_string(k) + " of the indices is out of range for a " +
                              "dataset of length " + std::to_string(length));
    }
    index += length;
  }
  return MapDataset(internal::MakeReindexNode(node_, std::move(indices)));
}

MapDataset MapDataset::Repeat(std::optional<int64_t> num_epochs, bool reseed_each_epoch) const {
  if (num_epochs && *num_epochs <= 0) {
    throw std::invalid_argument("repeat: num_epochs must be positive, got " +
                                std::to_string(*num_epochs));
  }
  if (Length() == kInfiniteLength) {
    throw std::invalid_argument("repeat: the dataset is already infinite");
  }
  return MapDataset(internal::MakeRepeatNode(node_, num_epochs, reseed_each_epoch));
}

MapDataset MapDataset::Map(MapFn fn, bool calls_python) const {
  if (!fn) throw std::invalid_argument("map: empty function");
  return MapDataset(internal::MakeMapNode(node_, std::move(fn), calls_python));
}

MapDataset MapDataset::RandomMap(RandomMapFn fn, std::optional<AnySeed> seed,
                                 bool calls_python, MapInto into) const {
  if (!fn) throw std::invalid_argument("random_map: empty function");
  return MapDataset(internal::MakeRandomMapNode(node_, std::move(fn),
                                                ResolveAnySeed(std::move(seed), *node_),
                                                calls_python, std::move(into)));
}

MapDataset MapDataset::MapWithIndex(MapWithIndexFn fn, bool calls_python, MapInto into) const {
  if (!fn) throw std::invalid_argument("map_with_index: empty function");
  return MapDataset(
      internal::MakeMapWithIndexNode(node_, std::move(fn), calls_python, std::move(into)));
}

MapDataset MapDataset::Filter(FilterFn fn, bool calls_python) const {
  if (!fn) throw std::invalid_argument("filter: empty function");
  return MapDataset(internal::MakeFilterNode(node_, std::move(fn), calls_python));
}

MapDataset MapDataset::Batch(int64_t batch_size, bool drop_remainder, BatchFn batch_fn) const {
  if (batch_size <= 0) {
    throw std::invalid_argument("batch: batch_size must be positive, got " +
                                std::to_string(batch_size));
  }
  if (node_->Filters()) throw std::invalid_argument(BatchAfterDiscardMessage(*node_));
  return MapDataset(
      internal::MakeBatchMapNode(node_, batch_size, drop_remainder, std::move(batch_fn)));
}

MapDataset MapDataset::WindowShuffle(int64_t window_size, int64_t seed) const {
  CheckPositive(window_size, "window_size");
  return MapDataset(internal::MakeWindowShuffleMapNode(node_, window_size,
                                                       CheckSeed(seed, "window shuffle")));
}

MapDataset MapDataset::FlatMap(FlatMapFn fn, int64_t max_fan_out, bool calls_python) const {
  if (!fn) throw std::invalid_argument("flat_map: empty function");
  CheckPositive(max_fan_out, "max_fan_out");
  return MapDataset(internal::MakeFlatMapNode(node_, std::move(fn), max_fan_out, calls_python));
}

IterDataset MapDataset::ToIter(ReadOptions options, bool allow_nones) const {
  options.Validate();
  return IterDataset(internal::MakePrefetchNode(node_, options, allow_nones));
}

IterDataset MapDataset::AsStream(ReadOptions options) const {
  options.Validate();
  return IterDataset(internal::MakePrefetchNode(node_, options, false, /*level=*/false));
}

IterDataset::IterDataset(std::shared_ptr<const IterNode> node) : node_(std::move(node)) {
  if (!node_) throw std::invalid_argument("IterDataset: null node");
}

IterDataset IterDataset::Seed(AnySeed seed) const {
  return IterDataset(internal::MakeWithOptionsIterNode(node_, seed.words()));
}

IterDataset IterDataset::WithOptions() const {
  return IterDataset(internal::MakeWithOptionsIterNode(node_, std::nullopt));
}

IterDataset IterDataset::Map(MapFn fn) const {
  if (!fn) throw std::invalid_argument("map: empty function");
  return IterDataset(internal::MakeIterMapNode(node_, std::move(fn)));
}

IterDataset IterDataset::RandomMap(RandomMapFn fn, std::optional<AnySeed> seed) const {
  if (!fn) throw std::invalid_argument("random_map: empty function");
  return IterDataset(
      internal::MakeIterRandomMapNode(node_, std::move(fn), ResolveAnySeed(std::move(seed), *node_)));
}

IterDataset IterDataset::MapWithIndex(MapWithIndexFn fn) const {
  if (!fn) throw std::invalid_argument("map_with_index: empty function");
  return IterDataset(internal::MakeIterMapWithIndexNode(node_, std::move(fn)));
}

IterDataset IterDataset::Filter(FilterFn fn, std::string transform_name) const {
  if (!fn) throw std::invalid_argument("filter: empty function");
  return IterDataset(
      internal::MakeIterFilterNode(node_, std::move(fn), std::move(transform_name)));
}

IterDataset IterDataset::Batch(int64_t batch_size, bool drop_remainder, BatchFn batch_fn) const {
  if (batch_size <= 0) {
    throw std::invalid_argument("batch: batch_size must be positive, got " +
                                std::to_string(batch_size));
  }
  return IterDataset(
      internal::MakeBatchIterNode(node_, batch_size, drop_remainder, std::move(batch_fn)));
}

IterDataset IterDataset::Zip(std::vector<IterDataset> datasets, bool strict) {
  std::vector<IterNodePtr> nodes;
  for (auto& d : datasets) nodes.push_back(d.node());
  return IterDataset(internal::MakeZipIterNode(std::move(nodes), strict));
}

IterDataset IterDataset::Mix(std::vector<IterDataset> datasets,
                             std::optional<std::vector<double>> weights,
                             std::vector<std::string> keys) {
  std::vector<IterNodePtr> nodes;
  for (auto& d : datasets) nodes.push_back(d.node());
  return IterDataset(internal::MakeIterMixNode(std::move(nodes), weights, std::move(keys)));
}

IterDataset IterDataset::Limit(int64_t count) const {
  if (count <= 0) {  // Grain's message
    throw std::invalid_argument("Count must be a non-negative integer. Got " +
                                std::to_string(count));
  }
  return IterDataset(internal::MakeLimitNode(node_, count));
}

IterDataset IterDataset::Repeat(std::optional<int64_t> num_epochs) const {
  if (num_epochs && *num_epochs <= 0) {
    throw std::invalid_argument("num_epochs must be positive, but got " +
                                std::to_string(*num_epochs) + ".");
  }
  return IterDataset(internal::MakeIterRepeatNode(node_, num_epochs));
}

IterDataset IterDataset::FlatMap(FlatMapFn fn) const {
  if (!fn) throw std::invalid_argument("flat_map: empty function");
  return IterDataset(internal::MakeIterFlatMapNode(node_, std::move(fn)));
}

IterDataset IterDataset::WindowShuffle(int64_t window_size, int64_t seed) const {
  CheckPositive(window_size, "window_size");
  return IterDataset(internal::MakeWindowShuffleIterNode(node_, window_size,
                                                         CheckSeed(seed, "window shuffle")));
}

IterDataset IterDataset::Rebatch(int64_t batch_size, bool drop_remainder) const {
  if (batch_size <= 0) throw std::invalid_argument("batch_size must be positive.");  // Grain's
  return IterDataset(internal::MakeRebatchNode(node_, batch_size, drop_remainder));
}

IterDataset IterDataset::ThreadPrefetch(int64_t buffer_size) const {
  return IterDataset(internal::MakeThreadPrefetchNode(node_, buffer_size));
}

IterDataset IterDataset::Cache() const { return IterDataset(internal::MakeCacheNode(node_)); }

IterDataset IterDataset::Interleave(int64_t count, std::function<IterDataset(int64_t)> dataset_at,
                                    InterleaveOptions options) {
  if (count < 0) throw std::invalid_argument("interleave: negative number of datasets");
  if (options.cycle_length <= 0) {
    throw std::invalid_argument("interleave: cycle_length must be positive, got " +
                                std::to_string(options.cycle_length));
  }
  if (options.num_make_iter_threads < 0 || options.make_iter_buffer_size < 0 ||
      options.iter_buffer_size < 0) {
    throw std::invalid_argument(
        "interleave: num_make_iter_threads, make_iter_buffer_size and iter_buffer_size must be"
        " >= 0");
  }
  auto node_at = [dataset_at = std::move(dataset_at)](int64_t i) { return dataset_at(i).node(); };
  return IterDataset(internal::MakeInterleaveNode(count, std::move(node_at), options));
}

IterDataset IterDataset::Interleave(std::vector<IterDataset> datasets,
                                    InterleaveOptions options) {
  const auto count = static_cast<int64_t>(datasets.size());
  return Interleave(
      count, [datasets = std::move(datasets)](int64_t i) { return datasets[i]; }, options);
}


std::unique_ptr<DatasetIterator> MakeIterator(const IterDataset& ds, DatasetOptions options) {
  return internal::MakeIteratorWithOptions(*ds.node(), std::move(options));
}

IterDataset WithFilterThresholds(const IterDataset& ds, FilterThresholds thresholds) {
  return IterDataset(internal::MakeFilterThresholdsNode(ds.node(), thresholds));
}

}  // namespace spelt
