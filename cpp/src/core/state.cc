// Helpers to read iterator states with errors that name the node and the field.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/nodes.h"

namespace spelt::internal {

const State& StateField(const State& state, const char* field, const char* node) {
  if (!state.is_object()) {
    throw std::invalid_argument(std::string(node) + ": state must be a JSON object, got " +
                                state.dump());
  }
  auto it = state.find(field);
  if (it == state.end()) {
    throw std::invalid_argument(std::string(node) + ": state has no field '" + field +
                                "': " + state.dump());
  }
  return *it;
}

int64_t StateInt(const State& state, const char* field, const char* node) {
  const State& v = StateField(state, field, node);
  if (!v.is_number_integer()) {
    throw std::invalid_argument(std::string(node) + ": state field '" + field +
                                "' must be an integer, got " + v.dump());
  }
  // JSON keeps integers in [2**63, 2**64) unsigned; as int64 they would read as negative.
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) {
    throw std::out_of_range(std::string(node) + ": state field '" + field + "' is " + v.dump() +
                            ", beyond the largest supported value 2**63 - 1");
  }
  return v.get<int64_t>();
}

int64_t StateNextIndex(const State& state, int64_t length, const char* node) {
  const State& v = StateField(state, kNextIndexKey, node);
  // An integer beyond int64: JSON unsigned, or a double of magnitude >= 2**63 (no fraction).
  const bool huge = (v.is_number_unsigned() &&
                     v.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) ||
                    (v.is_number_float() && std::isfinite(v.get<double>()) &&
                     std::fabs(v.get<double>()) >= 0x1p63);
  const int64_t n = huge ? -1 : StateInt(state, kNextIndexKey, node);
  if (huge || n < 0 || n > length) {
    throw std::out_of_range("Checkpoint `next_index` " + (huge ? v.dump() : std::to_string(n)) +
                            " is out of range for dataset of length " + std::to_string(length) +
                            ".");
  }
  return n;
}

State PositionState(int64_t next_index) { return State{{kNextIndexKey, next_index}}; }

State CountedStateAt(const DatasetIterator& parent, int64_t index, const State& state,
                     const char* count_key, const char* node) {
  return State{{kParentKey, parent.StateAtIndex(index, StateField(state, kParentKey, node))},
               {count_key, index}};
}

}  // namespace spelt::internal
