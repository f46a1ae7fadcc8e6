// index_shuffle and stack in spelt._core.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "gil.h"
#include "py_value.h"
#include "spelt/random.h"
#include "spelt/stack.h"

using namespace nanobind::literals;

namespace spelt::python {

void RegisterFunctions(nb::module_& m) {
  m.def("index_shuffle", [](int64_t index, int64_t max_index, int64_t seed, int64_t rounds) {
    if (index < 0 || max_index < 0 || rounds < 0 || rounds > 1024) {
      throw std::invalid_argument("index_shuffle: need 0 <= index <= max_index and rounds even"
                                  " in [4, 1024], got index=" + std::to_string(index) +
                                  ", max_index=" + std::to_string(max_index) +
                                  ", rounds=" + std::to_string(rounds));
    }
    return static_cast<int64_t>(IndexShuffle(static_cast<uint64_t>(index),
                                             static_cast<uint64_t>(max_index),
                                             CheckSeed(seed, "index_shuffle"),
                                             static_cast<uint32_t>(rounds)));
  }, "index"_a, "max_index"_a, "seed"_a, "rounds"_a = 4,
  "Grain's index_shuffle: position of `index` in a permutation of [0, max_index] (spelt/random.h).");

  m.def("stack", [](nb::list elements) {
    std::vector<Value> values;
    for (nb::handle e : elements) values.push_back(ToValue(e));
    Value out;
    {
      GilRelease release;
      out = Stack(values);
    }
    return ToPython(out);
  }, "elements"_a, "Grain's default batch function: stacks leaves along a new axis 0.");
}

}  // namespace spelt::python
