// spelt/node.h: the node interface, for authors of operations (spelt/dataset.h holds the
// handles that users build pipelines with).
//
// A MapNode is random access by *global* index: Length() is one epoch and index i >= Length()
// falls in epoch i / Length(), so every node passes epoch information to its parent (Grain's
// MapDataset model). Get() returns std::nullopt for an element that a filter removed.
// An IterNode is a stream; MakeIterator() starts one. A DatasetIterator is the only
// stateful object: GetState() returns a small JSON value (O(pipeline depth), never
// O(records)) and SetState() resumes exactly there without replaying the stream.
// As in Grain, a MapDataset element that is None is an element filtered out: transformations
// do not see it and to_iter_dataset skips it.
//
// Thread-safety: nodes are immutable and may be shared across threads; MapNode::Get and
// GetMany may be called from many threads at once (also where CallsPython(): each Python call
// takes the GIL). A DatasetIterator must be used by one thread at a time.
//
// Each transformation is one node class in its own file under cpp/src/ops/.
#ifndef SPELT_NODE_H_
#define SPELT_NODE_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spelt/random.h"
#include "spelt/value.h"

namespace spelt {

// Iterator state: a JSON value in Grain's layout for the same pipeline (keys in Grain's order).
using State = nlohmann::ordered_json;

// The key of a position state {"next_index": n}: the first n elements of a MapDataset read in
// order (Grain's PrefetchDatasetIterator: to_iter_dataset, mp_prefetch, the DataLoader).
inline constexpr char kNextIndexKey[] = "next_index";
// The key under which an operation's state holds its parent's (limit, repeat, rebatch, ...).
inline constexpr char kParentKey[] = "parent";

// Grain's get_next_index / set_next_index on an iterator that cannot tell the index of its next
// element (after a filter, a shuffle window, a mix, ...). Python's NotImplementedError.
class NextIndexUnsupported : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Length of an infinite MapDataset (Grain uses sys.maxsize).
inline constexpr int64_t kInfiniteLength = std::numeric_limits<int64_t>::max();

using MapFn = std::function<Value(Value)>;
using RandomMapFn = std::function<Value(Value, Philox&)>;
using MapWithIndexFn = std::function<Value(int64_t, Value)>;
using FilterFn = std::function<bool(const Value&)>;
using FlatMapFn = std::function<std::vector<Value>(Value)>;
// Combines a batch's elements (1 to batch_size of them) into one value.
using BatchFn = std::function<Value(std::vector<Value>)>;

// Optional beside a map's function (MapDataset::RandomMap, MapWithIndex): `write` puts the
// function's output for (index, element, rng) into `slot`, an array of the output's dtype and
// shape (one element's place in a batch, so that a MapDataset batch is filled without a copy:
// MapNode::GetStacked), and returns true; it returns false where the output is not such an
// array, and the caller then calls the function. `rng` is a random map's generator for the
// element (nullptr for a MapWithIndex). `in_place`: `write` also takes a slot that holds its
// own input element and changes it there (a flip). Called as the function is: from several
// threads at once.
struct MapInto {
  std::function<bool(int64_t index, const Value& element, Philox* rng, const Array& slot)> write;
  bool in_place = false;
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
  // True if computing this node's elements (Get, GetMany, or its iterators' Next) calls Python
  // in the calling thread: this node or an ancestor has a Python callable, source or sampler,
  // each call taking the GIL. Calls may still run on several threads at once (Python code
  // that releases the GIL interleaves). What the engine makes of it: the thread-pool executor
  // has the consumer compute the chunks until they are seen to wait (spelt/executor.h), and a
  // caller that holds the GIL keeps it while it calls such a node (cpp/python/).
  bool CallsPython() const { return calls_python_; }
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
                       bool calls_python_self = false, bool filters_self = false);
  void set_seed_words(std::vector<uint32_t> words) { seed_words_ = std::move(words); }
  // For nodes whose iterators call their parents from threads of their own, the parents
  // taking the GIL themselves where they need it (thread prefetch): CallsPython() is then
  // false.
  void clear_calls_python() { calls_python_ = false; }
  void set_not_a_level() { level_ = false; }

 private:
  std::vector<std::shared_ptr<const DatasetNode>> parents_;
  std::optional<std::vector<uint32_t>> seed_words_;
  bool calls_python_ = false;
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
  // in-memory array source; maps whose functions write into a batch's slots, MapInto);
  // nullopt where the node cannot, and the caller then uses
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
  // Asks an iterator whose Next() only hands out elements that threads of its own computed
  // ahead (to_iter_dataset().batch() read ahead by the pool) to read `elements` more ahead;
  // true if it took them on. A thread prefetch over such an iterator then starts no thread:
  // its thread would only move elements from one buffer to another, a hand-off per element
  // (I2 in docs/benchmarks.md). The default (every other iterator) returns false.
  virtual bool AbsorbReadAhead(int64_t /*elements*/) { return false; }

  // Grain's get_next_index / set_next_index, read from and written into states, so that an
  // iterator over another (thread prefetch, interleave) answers for states its parent is no
  // longer in. NextIndexOf: the index of the element that an iterator in `state` (a GetState()
  // of this iterator) returns next, counted in this iterator's elements. StateAtIndex: the
  // state of an iterator in `state` moved to return element `index` next, reached without
  // reading any element (SetState() then checks its range). Both read only what the iterator
  // was made with, never its position, so they may be called while another thread drives it.
  // The defaults throw NextIndexUnsupported; an operation overrides them where it can tell:
  // positions (to_iter_dataset) read and write {"next_index": n}, batch scales its parent's
  // index by the batch size, map passes its parent's through, limit / random_map /
  // map_with_index count their elements.
  virtual int64_t NextIndexOf(const State& state) const;
  virtual State StateAtIndex(int64_t index, const State& state) const;
  // NextIndexOf(GetState()) and SetState(StateAtIndex(index, GetState())).
  int64_t GetNextIndex() const { return NextIndexOf(GetState()); }
  void SetNextIndex(int64_t index) { SetState(StateAtIndex(index, GetState())); }
};

// The batches IterNode::MakeBatchIterator is asked for: `batch_size` elements combined by
// Stack(), the last batch partial unless `drop_remainder`. An element that is the object
// `none_marker` (by identity, if set) is a None element of its batch: a map between the batch
// and the node turns it into None (the DataLoader's records that an operation made None,
// spelt.data_loader.NONE_ELEMENT).
struct BatchRequest {
  int64_t batch_size = 1;
  bool drop_remainder = false;
  std::shared_ptr<const Opaque> none_marker;
};

class IterNode : public DatasetNode {
 public:
  using DatasetNode::DatasetNode;
  virtual std::unique_ptr<DatasetIterator> MakeIterator() const = 0;
  // An iterator of this node's elements in the batches of `request`, for nodes that compute
  // whole batches better than batching their iterator's elements one by one (read-ahead
  // threads or worker processes that stack them; spelt/batched_read_ahead.h); null for the
  // others (the default). It yields the elements, states and errors of `elementwise()`, the
  // plain batching of the elements (of MakeIterator(), with the marker made None).
  virtual std::unique_ptr<DatasetIterator> MakeBatchIterator(
      const BatchRequest& /*request*/,
      std::function<std::unique_ptr<DatasetIterator>()> /*elementwise*/) const {
    return nullptr;
  }
};

}  // namespace spelt

#endif  // SPELT_NODE_H_
