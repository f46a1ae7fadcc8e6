// spelt._core: the nanobind module. A thin layer over libspelt (dataset handles, iterators,
// samplers, sources), with Python callables, sources and datasets adapted by py_adapters.h.
// The Python package (python/spelt) builds Grain's API on top of it.
//
// The GIL is released around every call that runs the engine (Next, Get, SetState,
// iterator destruction); adapters take it back only to call Python, always through gil.h,
// which keeps threads out of an interpreter that is exiting.
#include "bindings.h"
#include "gil.h"
#include "py_value.h"

namespace spelt::python {

NB_MODULE(_core, m) {
  InitPyValue();
  RegisterExitHook();
  // Engine objects may hold Python references that are deliberately not released while the
  // interpreter shuts down; nanobind would report those as leaks.
  nb::set_leak_warnings(false);
  m.doc() = "libspelt bindings; use the `spelt` package instead of this module.";
  RegisterErrors(m);
  RegisterFunctions(m);
  RegisterDatasets(m);
  RegisterIterator(m);
  RegisterSamplers(m);
  RegisterArrayRecord(m);
  RegisterTFRecord(m);
  RegisterArena(m);
  RegisterProcessExecutor(m);
  RegisterPacking(m);
  RegisterStageStats(m);
  RegisterThreadPrefetch(m);
  RegisterInterleave(m);
  RegisterVision(m);
}

}  // namespace spelt::python
