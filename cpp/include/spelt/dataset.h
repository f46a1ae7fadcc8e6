// spelt/dataset.h: datasets (immutable pipeline descriptions) and iterators (their only state).
//
// A MapDataset is random access by *global* index: Length() is one epoch and index i >= Length()
// falls in epoch i / Length(), so every node passes epoch information to its parent (Grain's
// MapDataset model). Get() returns std::nullopt for an element that a filter removed.
// An IterDataset is a stream; MakeIterator() starts one. A DatasetIterator is the only
// stateful object: GetState() returns a small JSON value (O(pipeline depth), never
// O(records)) and SetState() resumes exactly there without replaying the stream.
// As in Grain, a MapDataset element that is None is an element filtered out: transformations
// do not see it and to_iter_dataset skips it.
//
// Thread-safety: datasets are immutable and may be shared across threads; MapNode::Get may be
// called concurrently (unless Serial()). A DatasetIterator must be used by one thread at a time.
//
// Ownership: the handle classes MapDataset / IterDataset are cheap to copy (shared_ptr to an
// immutable node). Each transformation is one node class in its own file under cpp/src/.
#ifndef SPELT_DATASET_H_
#define SPELT_DATASET_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spelt/random.h"
#include "spelt/source.h"
#include "spelt/value.h"

namespace spelt {

// Iterator state: a JSON value in Grain's layout for the same pipeline (keys in Grain's order).
using State = nlohmann::ordered_json;

// Length of an infinite MapDataset (Grain uses sys.maxsize).
inline constexpr int64_t kInfiniteLength = std::numeric_limits<int64_t>::max();

using MapFn = std::function<Value(Value)>;
using RandomMapFn = std::function<Value(Value, Philox&)>;
using MapWithIndexFn = std::function<Value(int64_t, Value)>;
using FilterFn = std::function<bool(const Value&)>;
using FlatMapFn = std::function<std::vector<Value>(Value)>;
// Combines a batch's elements (1 to batch_size of them) into one value.
using BatchFn = std::function<Value(std::vector<Value>)>;

// Grain's ReadOptions: read-ahead of to_iter_dataset. num_threads == 0 reads in the calling
// thread. Throws std::invalid_argument on negative values (Validate()).
struct ReadOptions {
  int64_t num_threads = 16;
  int64_t prefetch_buffer_size = 500;
  void Validate() const;
};

// Common part of every node: its parents, and the seed set by Seed() (used to derive default
// seeds for random transformations, as Grain does).
class DatasetNode {
 public:
  virtual ~DatasetNode() = default;
  // Grain's class name of this node, e.g. "ShuffleMapDataset" (used in messages).
  virtual std::string Name() const = 0;
  const std::vector<std::shared_ptr<const DatasetNode>>& parents() const { return parents_; }
  // The seed set by Seed() on this node as its 32-bit words, least significant first (numpy's
  // SeedSequence entropy of an int); nullopt if this node sets none.
  const std::optional<std::vector<uint32_t>>& seed_words() const { return seed_words_; }
  // True if this node or an ancestor must run its per-element work serially (e.g. it calls a
  // function that needs an interpreter lock). Read-ahead then happens in the calling thread.
  bool Serial() const { return serial_; }
  // True if this node or an ancestor is a filter: elements at some indices may be removed
  // (Grain forbids MapDataset.batch on top of one).
  bool Filters() const { return filters_; }
  // Grain's default seed for a random transformation placed on top of this node:
  // SeedSequence of (seed, depth) pairs found by breadth-first search towards the sources,
  // not looking past a seeded node; nullopt if no ancestor (nor this node) is seeded.
  std::optional<uint32_t> DefaultSeed() const;
  // False for a node that is no dataset of Grain's, so no level of that search
  // (MapDataset::AsStream()): its parents take its place, at its depth.
  bool IsLevel() const { return level_; }

 protected:
  explicit DatasetNode(std::vector<std::shared_ptr<const DatasetNode>> parents,
                       bool serial_self = false, bool filters_self = false);
  void set_seed_words(std::vector<uint32_t> words) { seed_words_ = std::move(words); }
  // For nodes whose iterators call their parents from threads of their own, the parents
  // taking any lock they need themselves (thread prefetch): Serial() is then false.
  void set_not_serial() { serial_ = false; }
  void set_not_a_level() { level_ = false; }

 private:
  std::vector<std::shared_ptr<const DatasetNode>> parents_;
  std::optional<std::vector<uint32_t>> seed_words_;
  bool serial_ = false;
  bool filters_ = false;
  bool level_ = true;
};

class MapNode : public DatasetNode {
 public:
  using DatasetNode::DatasetNode;
  // Number of elements in one epoch, or kInfiniteLength.
  virtual int64_t Length() const = 0;
  // Element at global index `index` (>= 0; may exceed Length() to address later epochs);
  // nullopt if filtered out. Throws on bad input, naming the index.
  virtual std::optional<Value> Get(int64_t index) const = 0;
  // Elements at global indices `indices` (each >= 0), appended to *out in order: what Get()
  // returns for each, computed together so that sources see many indices at once (one
  // batched read, one gather). On an exception, *out holds exactly the elements before the
  // failing index and the exception is the one Get() would raise for it.
  // The default calls Get() for each index; nodes that can do better override it.
  virtual void GetMany(std::span<const int64_t> indices,
                       std::vector<std::optional<Value>>* out) const;
  // The elements at `indices` stacked as Stack() stacks them (BatchMapDataset's default
  // batch), gathered straight into one array by nodes that can (index-mapping nodes over an
  // in-memory array source); nullopt where the node cannot, and the caller then uses
  // GetMany() and Stack(). May throw where GetMany() would; a caller that must raise
  // GetMany()'s exact error falls back to it.
  virtual std::optional<Value> GetStacked(std::span<const int64_t> /*indices*/) const {
    return std::nullopt;
  }
};

class DatasetIterator {
 public:
  virtual ~DatasetIterator() = default;
  DatasetIterator() = default;
  DatasetIterator(const DatasetIterator&) = delete;
  DatasetIterator& operator=(const DatasetIterator&) = delete;
  // The next element, or nullopt at the end of the stream (then again nullopt on every call).
  virtual std::optional<Value> Next() = 0;
  // State after the last element returned by Next().
  virtual State GetState() const = 0;
  // Restores a state from GetState() of an iterator of the same pipeline.
  // Throws std::invalid_argument if the state is malformed, naming the missing/bad field.
  virtual void SetState(const State& state) = 0;
  // Starts background read-ahead before the first Next() (Grain's start_prefetch): iterators
  // that read ahead on threads of their own (thread prefetch, interleave) start it, and
  // iterators over other iterators pass it on to them, as Grain's do. The default (sources)
  // does nothing. Idempotent.
  virtual void StartPrefetch() {}
};

class IterNode : public DatasetNode {
 public:
  using DatasetNode::DatasetNode;
  virtual std::unique_ptr<DatasetIterator> MakeIterator() const = 0;
  // An iterator of this node's elements in batches of `batch_size` combined by Stack() (the
  // last one partial unless `drop_remainder`), for nodes that compute whole batches better
  // than batching their iterator's elements one by one (read-ahead that stacks on its
  // threads); null for the others (the default). It yields the elements, states and errors of
  // `elementwise()`, the plain batching of MakeIterator()'s elements.
  virtual std::unique_ptr<DatasetIterator> MakeBatchIterator(
      int64_t /*batch_size*/, bool /*drop_remainder*/,
      std::function<std::unique_ptr<DatasetIterator>()> /*elementwise*/) const {
    return nullptr;
  }
};

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
  // `serial`: the function must be called from one thread at a time (see DatasetNode::Serial).
  MapDataset Map(MapFn fn, bool serial = false) const;
  // fn gets an rng keyed by the seed with counter [0, 0, 0, global index] (Grain's scheme:
  // numpy's Philox(seed), any non-negative seed). Without `seed`, the default seed derived
  // from Seed() (std::invalid_argument if there is none).
  MapDataset RandomMap(RandomMapFn fn, std::optional<AnySeed> seed = std::nullopt,
                       bool serial = false) const;
  MapDataset MapWithIndex(MapWithIndexFn fn, bool serial = false) const;
  MapDataset Filter(FilterFn fn, bool serial = false) const;
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
  MapDataset FlatMap(FlatMapFn fn, int64_t max_fan_out, bool serial = false) const;
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
  // elements ahead (0: none, Next() reads the parent). The state is the parent's state after
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
  struct InterleaveOptions {
    int64_t cycle_length = 1;
    int64_t num_make_iter_threads = 1;  // 0: iterators are made when needed, in Next()
    int64_t make_iter_buffer_size = 1;  // iterators made ahead (with num_make_iter_threads > 0)
    int64_t iter_buffer_size = 1;       // ThreadPrefetch buffer of each interleaved iterator
  };
  static IterDataset Interleave(int64_t count, std::function<IterDataset(int64_t)> dataset_at,
                                InterleaveOptions options);
  static IterDataset Interleave(std::vector<IterDataset> datasets, InterleaveOptions options);

  const std::shared_ptr<const IterNode>& node() const { return node_; }

 private:
  std::shared_ptr<const IterNode> node_;
};

}  // namespace spelt

#endif  // SPELT_DATASET_H_
