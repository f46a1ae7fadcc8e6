// spelt/dataset.h: the dataset handles, immutable pipeline descriptions that users build with
// (the node interface they wrap, for authors of operations, is spelt/node.h).
//
// A MapDataset is random access by *global* index (MapNode, spelt/node.h); an IterDataset is a
// stream; MakeIterator() starts one, and a DatasetIterator is the only stateful object: its
// GetState() is a small JSON value and SetState() resumes exactly there.
// As in Grain, a MapDataset element that is None is an element filtered out: transformations
// do not see it and to_iter_dataset skips it.
//
// Thread-safety: datasets are immutable and may be shared across threads. A DatasetIterator
// must be used by one thread at a time.
//
// Ownership: the handle classes MapDataset / IterDataset are cheap to copy (shared_ptr to an
// immutable node). Their methods check arguments and call the node factories of cpp/src/ops/
// (cpp/src/api/ implements them). The handles are the top layer: no operation uses them.
#ifndef SPELT_DATASET_H_
#define SPELT_DATASET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spelt/dataset_options.h"
#include "spelt/interleave.h"
#include "spelt/node.h"
#include "spelt/random.h"
#include "spelt/read_options.h"
#include "spelt/source.h"
#include "spelt/value.h"

namespace spelt {

class IterDataset;

// Handle to an immutable random-access dataset. All methods return new datasets.
class MapDataset {
 public:
  explicit MapDataset(std::shared_ptr<const MapNode> node);

  // Records of `source`; index i reads record i % Length().
  static MapDataset Source(std::shared_ptr<const RandomAccessSource> source);
  // Python's range(start, stop, step) as int64 scalars. Throws if step == 0.
  static MapDataset Range(int64_t start, int64_t stop, int64_t step = 1);
  static MapDataset Range(int64_t stop) { return Range(0, stop, 1); }

  // Grain's MapDataset.concatenate: the datasets one after the other; epoch e of the result
  // reads epoch e of each. Throws std::invalid_argument if one is infinite.
  static MapDataset Concatenate(std::vector<MapDataset> datasets);
  // Grain's MapDataset.mix: deterministic interleaving by weights (default uniform), scaled so
  // the smallest is 100 and truncated to ints. Length = min_i len_i / (w_i / sum w).
  // Throws std::invalid_argument on no datasets, a zero/negative weight, a weight count
  // mismatch, or a zero-length result component.
  static MapDataset Mix(std::vector<MapDataset> datasets,
                        std::optional<std::vector<double>> weights = std::nullopt);

  // Grain's ZipMapDataset: element i is the tuple of the datasets' elements i (None for a
  // filtered one). Throws std::invalid_argument if empty or the lengths differ.
  static MapDataset Zip(std::vector<MapDataset> datasets);

  int64_t Length() const { return node_->Length(); }
  // Element at global index (see MapNode::Get). Throws std::out_of_range if index < 0.
  std::optional<Value> Get(int64_t index) const;

  // Marks this dataset as the seed of default seeds of later random transformations (any
  // non-negative size, as Grain accepts).
  MapDataset Seed(AnySeed seed) const;
  // Global shuffle by index_shuffle; epoch e uses seed + e. Without `seed`, the default seed
  // derived from Seed() (std::invalid_argument if there is none).
  MapDataset Shuffle(std::optional<int64_t> seed = std::nullopt) const;
  // Python slice semantics (negative values count from the end); nullopt = slice default.
  MapDataset Slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                   std::optional<int64_t> step = std::nullopt) const;
  // Grain's MapDataset.slice(Sequence[int]) (ReindexMapDataset): element k is this dataset's
  // element indices[k % indices.size()], in every epoch (a fixed subset, as Slice). A negative
  // index counts from the end of the first epoch (-1 is Length() - 1); an index >= Length()
  // reads a later epoch, as Get does. Length() is indices.size(). Throws std::out_of_range for
  // an index below -Length(), naming its position.
  MapDataset Reindex(std::vector<int64_t> indices) const;
  // num_epochs epochs (nullopt = infinite). reseed_each_epoch=false replays epoch 0 exactly.
  MapDataset Repeat(std::optional<int64_t> num_epochs = std::nullopt,
                    bool reseed_each_epoch = true) const;
  // `calls_python`: fn calls Python (see DatasetNode::CallsPython; it may still be called from
  // several threads at once).
  MapDataset Map(MapFn fn, bool calls_python = false) const;
  // fn gets an rng keyed by the seed with counter [0, 0, 0, global index] (Grain's scheme:
  // numpy's Philox(seed), any non-negative seed). Without `seed`, the default seed derived
  // from Seed() (std::invalid_argument if there is none).
  // `into`: see MapInto (spelt/node.h).
  MapDataset RandomMap(RandomMapFn fn, std::optional<AnySeed> seed = std::nullopt,
                       bool calls_python = false, MapInto into = {}) const;
  MapDataset MapWithIndex(MapWithIndexFn fn, bool calls_python = false, MapInto into = {}) const;
  MapDataset Filter(FilterFn fn, bool calls_python = false) const;
  // Batches never span epochs. Throws std::invalid_argument if batch_size <= 0 or if an
  // ancestor is a filter (as Grain: batch an IterDataset instead).
  MapDataset Batch(int64_t batch_size, bool drop_remainder = false, BatchFn batch_fn = {}) const;
  // Grain's WindowShuffleMapDataset: shuffles within consecutive windows of window_size
  // indices of each epoch (window w by index_shuffle with seed + w mod 2^32; the last window
  // of an epoch holds the remainder). Throws std::invalid_argument if window_size <= 0 or
  // seed is outside [0, 2^32).
  MapDataset WindowShuffle(int64_t window_size, int64_t seed) const;
  // Grain's FlatMapMapDataset: element i is output i % max_fan_out of fn(parent element
  // i / max_fan_out), filtered (nullopt) past fn's outputs; Length() is max_fan_out times the
  // parent's. Get() throws std::invalid_argument if fn returns more than max_fan_out values.
  // Throws std::invalid_argument if max_fan_out <= 0.
  MapDataset FlatMap(FlatMapFn fn, int64_t max_fan_out, bool calls_python = false) const;
  // Ordered read-ahead (Grain's to_iter_dataset). Nones (filtered) are skipped unless
  // allow_nones, in which case they come out as Value() (None).
  IterDataset ToIter(ReadOptions options = {}, bool allow_nones = false) const;
  // This dataset read as a stream by an IterDataset operation, as Grain's operations read a
  // MapDataset parent (iter(parent), i.e. its to_iter_dataset()): ToIter(options), except
  // that the read-ahead node is no level of the default-seed derivation, as in Grain, where
  // the operation's parent is the MapDataset itself.
  IterDataset AsStream(ReadOptions options = {}) const;

  const std::shared_ptr<const MapNode>& node() const { return node_; }

 private:
  std::shared_ptr<const MapNode> node_;
};

// Handle to an immutable stream dataset.
class IterDataset {
 public:
  explicit IterDataset(std::shared_ptr<const IterNode> node);

  std::unique_ptr<DatasetIterator> MakeIterator() const { return node_->MakeIterator(); }

  // Grain's ZipIterDataset: tuples of the streams' next elements, until the shortest ends;
  // with `strict`, streams of different lengths raise std::invalid_argument at the end.
  static IterDataset Zip(std::vector<IterDataset> datasets, bool strict = true);
  // Grain's MixedIterDataset: element k from the dataset MapDataset::Mix would pick for k;
  // stops at the first exhausted pick. `keys`: one per dataset for Grain's mapping of parents
  // (state "parents" is then an object). Throws as MapDataset::Mix.
  static IterDataset Mix(std::vector<IterDataset> datasets,
                         std::optional<std::vector<double>> weights = std::nullopt,
                         std::vector<std::string> keys = {});

  IterDataset Seed(AnySeed seed) const;
  // Grain's WithOptionsIterDataset as a node: this dataset's elements and state, one level
  // further from the seeds that random transformations on top derive their default seed from
  // (the options themselves are given to MakeIterator, spelt/dataset_options.h).
  IterDataset WithOptions() const;
  IterDataset Map(MapFn fn) const;
  // The k-th element seen by an iterator gets an rng with counter [0, 0, 0, k].
  IterDataset RandomMap(RandomMapFn fn, std::optional<AnySeed> seed = std::nullopt) const;
  // fn gets the running count of elements seen by the iterator.
  IterDataset MapWithIndex(MapWithIndexFn fn) const;
  // `transform_name` names fn in the filter-threshold messages (spelt/dataset_options.h).
  IterDataset Filter(FilterFn fn, std::string transform_name = "filter") const;
  IterDataset Batch(int64_t batch_size, bool drop_remainder = false, BatchFn batch_fn = {}) const;
  // Each element becomes zero or more elements.
  IterDataset FlatMap(FlatMapFn fn) const;
  // Grain's WindowShuffleIterDataset: reads window_size elements at a time and hands them out
  // shuffled (window w by index_shuffle with seed + w mod 2^32). Throws std::invalid_argument
  // if window_size <= 0 or seed is outside [0, 2^32).
  IterDataset WindowShuffle(int64_t window_size, int64_t seed) const;
  // Grain's RebatchIterDataset: the parent's batches (trees of arrays sharing a leading
  // dimension) re-cut into batches of batch_size rows, the last partial unless
  // drop_remainder. Next() throws std::invalid_argument on a leaf that is not an array with a
  // leading dimension, or on arrays that np.concatenate rejects. Throws std::invalid_argument
  // if batch_size <= 0.
  IterDataset Rebatch(int64_t batch_size, bool drop_remainder = false) const;
  // The first `count` elements (Grain's LimitIterDataset). Throws std::invalid_argument if
  // count <= 0.
  IterDataset Limit(int64_t count) const;
  // The stream num_epochs times (nullopt: forever), each epoch identical (Grain's
  // RepeatIterDataset). Throws std::invalid_argument if num_epochs <= 0.
  IterDataset Repeat(std::optional<int64_t> num_epochs = std::nullopt) const;
  // Grain's ThreadPrefetchIterDataset: a thread of the iterator reads up to `buffer_size`
  // elements ahead (0: none, Next() reads the parent; none either over a parent that reads
  // them ahead itself, DatasetIterator::AbsorbReadAhead). The state is the parent's state after
  // the last element returned; restoring drops what was read ahead (ops/thread_prefetch.cc).
  // Throws std::invalid_argument if buffer_size < 0.
  IterDataset ThreadPrefetch(int64_t buffer_size) const;
  // Grain's CacheIterDataset: the first pass reads the parent, later passes (after a
  // restart to the initial state, as RepeatIterDataset does) read the elements kept in memory
  // (ops/cache.cc).
  IterDataset Cache() const;
  // Grain's InterleaveIterDataset over `count` datasets, `dataset_at(i)` being dataset i (called
  // each time its iterator is made, possibly from a thread of the iterator): elements are
  // taken in turn from at most options.cycle_length open iterators (ops/interleave.cc).
  // Throws std::invalid_argument on count < 0 or a bad option.
  using InterleaveOptions = spelt::InterleaveOptions;  // spelt/interleave.h
  static IterDataset Interleave(int64_t count, std::function<IterDataset(int64_t)> dataset_at,
                                InterleaveOptions options);
  static IterDataset Interleave(std::vector<IterDataset> datasets, InterleaveOptions options);

  const std::shared_ptr<const IterNode>& node() const { return node_; }

 private:
  std::shared_ptr<const IterNode> node_;
};

// An iterator of `ds` whose filtering iterators check `options` (spelt/dataset_options.h).
// ds.MakeIterator() is MakeIterator(ds, DatasetOptions{}).
std::unique_ptr<DatasetIterator> MakeIterator(const IterDataset& ds, DatasetOptions options);

// `ds`, whose iterators check `thresholds` over the options they are made with: Grain's
// WithOptionsIterDataset inside a dataset that another iterator opens when it needs it (one of
// an interleave's datasets). Not a level of the default-seed derivation.
IterDataset WithFilterThresholds(const IterDataset& ds, FilterThresholds thresholds);

}  // namespace spelt

#endif  // SPELT_DATASET_H_
