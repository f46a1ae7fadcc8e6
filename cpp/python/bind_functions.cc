// index_shuffle, stack and batch_and_pad in spelt._core.
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
  // Grain's binding (index_shuffle_module.cc at 0.2.18): index and max_index are int64, seed
  // and rounds uint32 (out of range, negative or not an int: TypeError), then its checks, in
  // its order, with its messages (ValueError).
  m.def("index_shuffle", [](int64_t index, int64_t max_index, uint32_t seed, uint32_t rounds) {
    if (rounds < 4 || rounds % 2 != 0 || rounds > 1024) {
      throw std::invalid_argument(
          "rounds must be an even integer between 4 and 1024, but got rounds = " +
          std::to_string(rounds));
    }
    if (index < 0 || index > max_index) {
      throw std::invalid_argument("index must be in [0, max_index], but got index = " +
                                  std::to_string(index) +
                                  " and max_index = " + std::to_string(max_index));
    }
    return static_cast<int64_t>(IndexShuffle(static_cast<uint64_t>(index),
                                             static_cast<uint64_t>(max_index), seed, rounds));
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

  m.def("batch_and_pad", [](nb::list elements, int64_t batch_size, nb::handle pad_value) {
    std::vector<Value> values;
    for (nb::handle e : elements) values.push_back(ToValue(e));
    const Value pad = ToValue(pad_value);
    Value out;
    {
      GilRelease release;
      out = BatchAndPad(values, batch_size, pad);
    }
    return ToPython(out);
  }, "elements"_a, "batch_size"_a, "pad_value"_a,
  "Grain's batch_and_pad: stacks, then pads axis 0 to batch_size rows (spelt/stack.h).");
}

}  // namespace spelt::python
