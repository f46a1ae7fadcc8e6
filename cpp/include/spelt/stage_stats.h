// spelt/stage_stats.h: per-stage execution counters, the engine side of the execution summary
// (python/spelt/_summary.py; Grain's counterpart is grain/_src/python/dataset/stats.py).
//
// Counting is off unless asked for: a pipeline is profiled by building it with each node
// wrapped by ProfiledMapNode / ProfiledIterNode, which forward every call unchanged (same
// elements, states, errors, batched fast paths) and add to a StageStats. An unwrapped
// pipeline pays nothing. A wrapped call costs two steady_clock reads and four relaxed atomic
// adds, plus the bytes of the element (ValueBytes).
#ifndef SPELT_STAGE_STATS_H_
#define SPELT_STAGE_STATS_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "spelt/dataset.h"
#include "spelt/value.h"

namespace spelt {

// A snapshot of one stage's counters. Times are nanoseconds summed over all threads that ran
// the stage (so they may exceed the wall time when a thread pool runs it).
struct StageCounters {
  int64_t elements = 0;  // elements produced (a stacked batch read counts its rows)
  int64_t total_ns = 0;  // time in the stage's calls, its parents' calls included
  int64_t self_ns = 0;   // total_ns less the time in calls to profiled parents on the same thread
  int64_t bytes = 0;     // ValueBytes() of the elements produced
};

// The counters of one stage. Thread-safe: any number of threads may Record() at once.
class StageStats {
 public:
  void Record(int64_t elements, int64_t total_ns, int64_t self_ns, int64_t bytes);
  StageCounters Snapshot() const;

 private:
  std::atomic<int64_t> elements_{0}, total_ns_{0}, self_ns_{0}, bytes_{0};
};

// Bytes of the array and string leaves of `value` (array nbytes, string length), plus
// Opaque::ByteSize() of its foreign leaves; scalars and None count 0.
int64_t ValueBytes(const Value& value);

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
