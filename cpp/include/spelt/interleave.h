// spelt/interleave.h: the options and the state of Grain's InterleaveIterDataset
// (IterDataset::Interleave, ops/interleave.cc), whose state keys the Python face reads too
// (per-dataset "shard" states).
//
// State (Grain's keys and order): {kNextIndexInCycleKey: the slot read next,
// kNextIndexInDatasetsKey: the first dataset not yet opened, kIteratorsInUseIndicesKey: the
// dataset of each slot, kIteratorsInUseStatesKey: its iterator's state, kExhaustedKey: 0/1 per
// slot, kFutureStatesKey: dataset index as a string -> the state its iterator starts from (set
// by elastic restores)}.
#ifndef SPELT_INTERLEAVE_H_
#define SPELT_INTERLEAVE_H_

#include <cstdint>

namespace spelt {

struct InterleaveOptions {
  int64_t cycle_length = 1;
  int64_t num_make_iter_threads = 1;  // 0: iterators are made when needed, in Next()
  int64_t make_iter_buffer_size = 1;  // iterators made ahead (with num_make_iter_threads > 0)
  int64_t iter_buffer_size = 1;       // ThreadPrefetch buffer of each interleaved iterator
};

inline constexpr char kNextIndexInCycleKey[] = "next_index_in_cycle";
inline constexpr char kNextIndexInDatasetsKey[] = "next_index_in_datasets";
inline constexpr char kIteratorsInUseIndicesKey[] = "iterators_in_use_indices";
inline constexpr char kIteratorsInUseStatesKey[] = "iterators_in_use_states";
inline constexpr char kExhaustedKey[] = "exhausted";
inline constexpr char kFutureStatesKey[] = "future_states";

}  // namespace spelt

#endif  // SPELT_INTERLEAVE_H_
