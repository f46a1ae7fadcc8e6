// spelt/stage_stats.h: per-stage execution counters, the engine side of the execution summary
// (python/spelt/_summary.py; Grain's counterpart is grain/_src/python/dataset/stats.py).
//
// Counting is off unless asked for: a pipeline is profiled by building it with each node
// wrapped by ProfiledMapNode / ProfiledIterNode, which forward every call unchanged (same
// elements, states, errors, batched fast paths) and add to a StageStats. An unwrapped
// pipeline pays nothing. A wrapped call costs two steady_clock reads and four relaxed atomic
// adds, plus the bytes of the element (StageStats::BytesOf).
#ifndef SPELT_STAGE_STATS_H_
#define SPELT_STAGE_STATS_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "spelt/node.h"
#include "spelt/value.h"

namespace spelt {

// A snapshot of one stage's counters. Times are nanoseconds summed over all threads that ran
// the stage (so they may exceed the wall time when a thread pool runs it).
struct StageCounters {
  int64_t elements = 0;  // elements produced (a stacked batch read counts its rows)
  int64_t total_ns = 0;  // time in the stage's calls, its parents' calls included
  int64_t self_ns = 0;   // total_ns less the time in calls to profiled parents on the same thread
  int64_t bytes = 0;     // bytes of the elements produced (StageStats::BytesOf)
};

// The counters of one stage. Thread-safe: any number of threads may Record() at once.
class StageStats {
 public:
  void Record(int64_t elements, int64_t total_ns, int64_t self_ns, int64_t bytes);
  StageCounters Snapshot() const;
  // The bytes of `value` (an output of this stage) to count: ValueBytes() of its native
  // leaves always; its Opaque leaves (whose size may need a foreign runtime's lock, e.g. the
  // GIL) on the first 64 calls, then on one call in 16, scaled by 16.
  int64_t BytesOf(const Value& value);

 private:
  std::atomic<int64_t> elements_{0}, total_ns_{0}, self_ns_{0}, bytes_{0}, calls_{0};
};

// Bytes of the array and string leaves of `value` (array nbytes, string length), plus
// Opaque::ByteSize() of its foreign leaves times `opaque_weight` (0: not asked); scalars and
// None count 0.
int64_t ValueBytes(const Value& value, int64_t opaque_weight = 1);

// `node` with every Get / GetMany / GetStacked counted in `stats`; Name(), Length() and the
// results are the node's. Throws std::invalid_argument if either is null.
std::shared_ptr<const MapNode> ProfiledMapNode(std::shared_ptr<const MapNode> node,
                                               std::shared_ptr<StageStats> stats);

// `node` whose iterators count every Next() in `stats` (also those of the batched iterator it
// offers through MakeBatchIterator, counted by rows); states and results are the node's.
// Throws std::invalid_argument if either is null.
std::shared_ptr<const IterNode> ProfiledIterNode(std::shared_ptr<const IterNode> node,
                                                 std::shared_ptr<StageStats> stats);

}  // namespace spelt

#endif  // SPELT_STAGE_STATS_H_
