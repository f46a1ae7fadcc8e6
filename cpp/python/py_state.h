// Iterator states across the seam: the one converter between the engine's State
// (nlohmann::ordered_json, spelt/node.h) and the Python objects Grain's iterators return.
//
// Both directions build the objects directly (no JSON text). JSON has no int keys and no
// tuples, so two of Grain's layouts are fixed up here and nowhere else:
//   - "future_states" (Grain's InterleaveDatasetIterator): a dict keyed by int dataset index
//     in Python; decimal-string keys in the engine.
//   - "remainder_slices" (Grain's ConcatThenSplitIterDataset): its values are (start, stop)
//     tuples in Python (Grain compares them with the tuple (-1, -1)); arrays in the engine.
// From Python: dicts with str (or, under any key, int) keys, lists and tuples, bool, int,
// float, str, None and numpy scalars (as their Python value). ValueError naming the path of
// the value (e.g. `state['parent']['next_index']`) for anything else; IndexError for an int
// that fits neither int64 nor uint64 (the engine's positions and counters are 64-bit; Grain
// raises IndexError for a next_index past the end), printed exactly.
// REQUIRES: the GIL.
#pragma once

#include <nanobind/nanobind.h>

#include "spelt/dataset.h"

namespace spelt::python {

namespace nb = nanobind;

nb::object StateToPython(const State& state);
State StateFromPython(nb::handle obj);

}  // namespace spelt::python
