// spelt._core.Arena and UnpackedChunk: the shared-memory hand-off between worker processes and
// the consumer (see py_arena.cc for the Python API and the record layout).
#ifndef SPELT_PYTHON_PY_ARENA_H_
#define SPELT_PYTHON_PY_ARENA_H_

#include <optional>
#include <vector>

#include "py_value.h"
#include "spelt/value.h"

namespace spelt::python {

// The elements of one chunk reply, as Arena.unpack rebuilt them, or as a Ray actor returned them
// (UnpackedChunk(values)); Python: len() and .error.
// values[k] is nullopt where a filter removed the element; natively encoded elements are engine
// Values whose arrays point into the arena, pickled ones are Python objects (PyOpaque).
struct UnpackedChunk {
  std::vector<std::optional<Value>> values;
  nb::object error = nb::none();  // what loading element values.size() raised, else None
};

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_ARENA_H_
