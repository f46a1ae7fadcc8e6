// spelt/interleave.h: the state of Grain's InterleaveIterDataset (IterDataset::Interleave,
// ops/interleave.cc), whose keys the Python face reads too (per-dataset "shard" states).
//
// State (Grain's keys and order): {kNextIndexInCycleKey: the slot read next,
// kNextIndexInDatasetsKey: the first dataset not yet opened, kIteratorsInUseIndicesKey: the
// dataset of each slot, kIteratorsInUseStatesKey: its iterator's state, kExhaustedKey: 0/1 per
// slot, kFutureStatesKey: dataset index as a string -> the state its iterator starts from (set
// by elastic restores)}.
#ifndef SPELT_INTERLEAVE_H_
#define SPELT_INTERLEAVE_H_

namespace spelt {

inline constexpr char kNextIndexInCycleKey[] = "next_index_in_cycle";
inline constexpr char kNextIndexInDatasetsKey[] = "next_index_in_datasets";
inline constexpr char kIteratorsInUseIndicesKey[] = "iterators_in_use_indices";
inline constexpr char kIteratorsInUseStatesKey[] = "iterators_in_use_states";
inline constexpr char kExhaustedKey[] = "exhausted";
inline constexpr char kFutureStatesKey[] = "future_states";

}  // namespace spelt

#endif  // SPELT_INTERLEAVE_H_
