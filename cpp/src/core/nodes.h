// Internal: what every node file shares (node pointer types, the None convention, state
// fields). Each transformation declares its factory in its own header, cpp/src/ops/<op>.h.
#ifndef SPELT_SRC_CORE_NODES_H_
#define SPELT_SRC_CORE_NODES_H_

#include <memory>
#include <optional>
#include <vector>

#include "spelt/node.h"

namespace spelt::internal {

using MapNodePtr = std::shared_ptr<const MapNode>;
using IterNodePtr = std::shared_ptr<const IterNode>;

// Grain's convention on MapDatasets: a None element is a filtered-out element.
inline std::optional<Value> NoneAsFiltered(Value v) {
  if (v.is_none()) return std::nullopt;
  return v;
}

// The key under which an operation's state holds its parents' states (mix, zip).
inline constexpr char kParentsKey[] = "parents";

// state.cc: reading fields of a State with clear errors (std::invalid_argument naming the
// node and the field; std::out_of_range for an integer beyond int64, e.g. 2**63).
const State& StateField(const State& state, const char* field, const char* node);
int64_t StateInt(const State& state, const char* field, const char* node);
// The "next_index" of a position state ({"next_index": n}) of a dataset of `length` elements.
// std::out_of_range (Python's IndexError) with Grain's message (PrefetchDatasetIterator) if
// it is not in [0, length], including integers beyond int64 (which arrive as JSON doubles).
int64_t StateNextIndex(const State& state, int64_t length, const char* node);
// The position state {"next_index": next_index} (kNextIndexKey).
State PositionState(int64_t next_index);
// For operations whose state is {"parent": parent's state, count_key: elements returned}
// (limit, random_map, map_with_index): where set_next_index moves them, the parent moved to
// `index` as well (DatasetIterator::StateAtIndex).
State CountedStateAt(const DatasetIterator& parent, int64_t index, const State& state,
                     const char* count_key, const char* node);

}  // namespace spelt::internal

#endif  // SPELT_SRC_CORE_NODES_H_
