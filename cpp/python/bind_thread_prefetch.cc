// ThreadPrefetchIterDataset and ThreadPrefetchDatasetIterator in spelt._core
// (python/spelt/transformations/thread_prefetch.py), and the wait hook that lets engine threads run Python
// while a consumer holding the GIL waits for them (spelt/blocking_wait.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/unique_ptr.h>

#include "bindings.h"
#include "gil.h"
#include "py_adapters.h"
#include "spelt/blocking_wait.h"
#include "spelt/thread_prefetch.h"

using namespace nanobind::literals;

namespace spelt::python {
namespace {

// Gives up the GIL for the wait if this thread holds it.
void ReleaseGilWhileWaiting(const std::function<void()>& wait) {
  if (PyGILState_Check()) {
    GilRelease release;
    wait();
  } else {
    wait();
  }
}

}  // namespace

void RegisterThreadPrefetch(nb::module_& m) {
  SetBlockingWaitHook(&ReleaseGilWhileWaiting);
  // At exit, before the interpreter ends the threads that would take the GIL (a thread ended
  // inside nanobind's GIL acquisition would terminate the process).
  nb::module_::import_("atexit").attr("register")(
      nb::cpp_function([] { StopThreadPrefetching(); }));
  m.def("thread_prefetch", &IterDataset::ThreadPrefetch, "dataset"_a, "buffer_size"_a,
        "Grain's ThreadPrefetchIterDataset (spelt/thread_prefetch.h).");
  m.def("thread_prefetch_iterator", [](nb::object parent, int64_t buffer_size) {
    auto it = MakeThreadPrefetchIterator(PyDatasetIterator(parent), buffer_size);
    return WrapIterator(std::move(it), /*calls_python=*/false);
  }, "parent"_a, "buffer_size"_a,
     nb::sig("def thread_prefetch_iterator(parent: object, buffer_size: int) -> DatasetIterator"),
     "Grain's ThreadPrefetchDatasetIterator over a Python iterator with get_state/set_state.");
  m.def("cache", &IterDataset::Cache, "dataset"_a, "Grain's CacheIterDataset (ops/cache.cc).");
}

}  // namespace spelt::python
