// Stage counters of the execution summary in spelt._core (spelt/stage_stats.h; used by
// python/spelt/_summary.py).
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>

#include "bindings.h"
#include "py_value.h"
#include "spelt/stage_stats.h"

using namespace nanobind::literals;

namespace spelt::python {

void RegisterStageStats(nb::module_& m) {
  nb::class_<StageStats>(m, "StageStats", "Counters of one pipeline stage (thread-safe).")
      .def(nb::new_([] { return std::make_shared<StageStats>(); }))
      .def("snapshot", [](const StageStats& s) {
        const StageCounters c = s.Snapshot();
        nb::dict out;
        out["elements"] = c.elements;
        out["total_ns"] = c.total_ns;
        out["self_ns"] = c.self_ns;
        out["bytes"] = c.bytes;
        return out;
      }, "{'elements', 'total_ns', 'self_ns', 'bytes'}: the counters now (ints; ns summed over "
         "the threads that ran the stage).");
  m.def("profiled_map", [](const MapDataset& d, std::shared_ptr<StageStats> stats) {
    return MapDataset(ProfiledMapNode(d.node(), OwnedByPyRef(std::move(stats))));
  }, "dataset"_a, "stats"_a, "The node with its Get/GetMany/GetStacked counted in stats.");
  m.def("profiled_iter", [](const IterDataset& d, std::shared_ptr<StageStats> stats) {
    return IterDataset(ProfiledIterNode(d.node(), OwnedByPyRef(std::move(stats))));
  }, "dataset"_a, "stats"_a, "The node with its iterators' Next counted in stats.");
}

}  // namespace spelt::python
