// DatasetIterator in spelt._core: an engine iterator owned by Python.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "bindings.h"
#include "gil.h"
#include "py_state.h"
#include "py_value.h"
#include "spelt/interleave.h"

namespace spelt::python {
namespace {

// An engine iterator owned by Python; destroyed without the GIL (it may join threads).
// A pipeline that calls Python per element (DatasetNode::CallsPython) runs with
// the GIL held by the calling thread: its work is mostly Python calls, which would otherwise
// take and drop the GIL several times per element. Other pipelines run without the GIL.
//
// Thread safety: an engine DatasetIterator must be used by one thread at a time, so every
// method holds `mu` for its whole call: next / get_state / set_state / close from several
// Python threads are serialised (as Grain's PrefetchDatasetIterator does with its lock), each
// element goes to exactly one caller, and a state is always taken between two elements.
// A thread never waits for `mu` while holding the GIL (the owner may need the GIL to run
// the pipeline's Python code), and a call made from inside a pipeline's callable on an
// iterator that is busy (e.g. the iterator the callable runs in) raises RuntimeError
// instead of deadlocking.
struct Iterator {
  std::unique_ptr<DatasetIterator> it;
  bool calls_python = false;
  std::mutex mu;
  std::atomic<std::thread::id> owner{};  // the thread holding `mu`, if any

  ~Iterator() {
    GilRelease release;
    it.reset();
  }
  // REQUIRES: `mu` held.
  DatasetIterator& get() {
    if (!it) throw std::invalid_argument("the iterator is closed");
    return *it;
  }
};

// Holds `self.mu` for one method call. REQUIRES: the GIL; waits for the mutex without it.
class Lock {
 public:
  explicit Lock(Iterator& self) : self_(self) {
    if (!self_.mu.try_lock()) {
      // The owner may be waiting for this very callable (a chunk computed on a pool thread):
      // a pipeline's callable never waits for a busy iterator.
      if (self_.owner.load() == std::this_thread::get_id() || InEngineCallback()) {
        throw std::runtime_error(
            "DatasetIterator used from inside its own pipeline, or from a pipeline's callable "
            "while another thread uses it (re-entrant call)");
      }
      GilRelease release;
      self_.mu.lock();
    }
    self_.owner.store(std::this_thread::get_id());
  }
  ~Lock() {
    self_.owner.store(std::thread::id());
    self_.mu.unlock();
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  Iterator& self_;
};

}  // namespace

nb::object WrapIterator(std::unique_ptr<DatasetIterator> it, bool calls_python) {
  auto out = std::make_unique<Iterator>();
  out->it = std::move(it);
  out->calls_python = calls_python;
  return nb::cast(std::move(out));
}

void RegisterIterator(nb::module_& m) {
  // State keys that the Python face reads (each owned by its iterator's header).
  m.attr("NEXT_INDEX_KEY") = kNextIndexKey;
  m.attr("PARENT_KEY") = kParentKey;
  m.attr("INTERLEAVE_NEXT_INDEX_IN_CYCLE_KEY") = kNextIndexInCycleKey;
  m.attr("INTERLEAVE_NEXT_INDEX_IN_DATASETS_KEY") = kNextIndexInDatasetsKey;
  m.attr("INTERLEAVE_ITERATORS_IN_USE_INDICES_KEY") = kIteratorsInUseIndicesKey;
  m.attr("INTERLEAVE_ITERATORS_IN_USE_STATES_KEY") = kIteratorsInUseStatesKey;
  m.attr("INTERLEAVE_EXHAUSTED_KEY") = kExhaustedKey;
  m.attr("INTERLEAVE_FUTURE_STATES_KEY") = kFutureStatesKey;
  nb::class_<Iterator>(m, "DatasetIterator",
                       "Iterator of an engine pipeline. Thread-safe: calls from several threads "
                       "run one at a time (a waiting thread does not hold the GIL), so each "
                       "element goes to exactly one caller and get_state() is always the "
                       "position between two elements. A call from inside the pipeline's own "
                       "callables raises RuntimeError.")
      .def("next", [](Iterator& self) {
        std::optional<Value> v;
        {
          Lock lock(self);
          if (self.calls_python) {
            v = self.get().Next();
          } else {
            GilRelease release;
            v = self.get().Next();
          }
        }
        if (!v) throw nb::stop_iteration();
        return ToPython(*v);
      }, "The next element; StopIteration at the end, ValueError once closed.")
      .def("get_state", [](Iterator& self) {
        State s;
        {
          Lock lock(self);
          GilRelease release;
          s = self.get().GetState();
        }
        return StateToPython(s);
      }, "The state after the last element returned (JSON-compatible dict).")
      .def("set_state", [](Iterator& self, nb::object state) {
        State s = StateFromPython(state);
        Lock lock(self);
        GilRelease release;
        self.get().SetState(s);
      }, "Restores a state of get_state(); ValueError if malformed or closed.")
      .def("get_next_index", [](Iterator& self) {
        Lock lock(self);
        GilRelease release;
        return self.get().GetNextIndex();
      }, "The index of the element next() returns next, read from get_state() (Grain's "
         "get_next_index: a batch counts batches, limit / random_map / map_with_index their "
         "elements). NotImplementedError (NextIndexUnsupported) where the pipeline cannot tell "
         "(after a filter, say); ValueError once closed.")
      .def("set_next_index", [](Iterator& self, int64_t index) {
        Lock lock(self);
        GilRelease release;
        self.get().SetNextIndex(index);
      }, "Moves the iterator to return element `index` next, without reading any element "
         "(Grain's set_next_index), through set_state: IndexError out of range; "
         "NotImplementedError (NextIndexUnsupported) where the pipeline cannot move to an "
         "index; ValueError once closed.", nb::arg("index"))
      .def("start_prefetch", [](Iterator& self) {
        Lock lock(self);
        GilRelease release;
        self.get().StartPrefetch();
      }, "Starts the pipeline's background read-ahead now (Grain's start_prefetch).")
      .def("close", [](Iterator& self) {
        Lock lock(self);
        GilRelease release;
        self.it.reset();
      }, "Releases the pipeline (after a next() in progress); idempotent.");
}

}  // namespace spelt::python
