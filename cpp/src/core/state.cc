// Helpers to read iterator states with errors that name the node and the field.
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
  return v.get<int64_t>();
}

}  // namespace spelt::internal
