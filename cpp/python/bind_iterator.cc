// DatasetIterator in spelt._core: an engine iterator owned by Python.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "py_value.h"

namespace spelt::python {
namespace {

// An engine iterator owned by Python; destroyed without the GIL (it may join threads).
// A serial pipeline (one that calls Python per element, see DatasetNode::Serial) runs with
// the GIL held by the calling thread: its work is mostly Python calls, which would otherwise
// take and drop the GIL several times per element. Other pipelines run without the GIL.
struct Iterator {
  std::unique_ptr<DatasetIterator> it;
  bool serial = false;
  bool closed = false;
  ~Iterator() {
    nb::gil_scoped_release release;
    it.reset();
  }
  DatasetIterator& get() {
    if (closed) throw std::invalid_argument("the iterator is closed");
    return *it;
  }
};

}  // namespace

nb::object WrapIterator(std::unique_ptr<DatasetIterator> it, bool serial) {
  auto out = std::make_unique<Iterator>();
  out->it = std::move(it);
  out->serial = serial;
  return nb::cast(std::move(out));
}

void RegisterIterator(nb::module_& m) {
  nb::class_<Iterator>(m, "DatasetIterator")
      .def("next", [](Iterator& self) {
        std::optional<Value> v;
        if (self.serial) {
          v = self.get().Next();
        } else {
          nb::gil_scoped_release release;
          v = self.get().Next();
        }
        if (!v) throw nb::stop_iteration();
        return ToPython(*v);
      })
      .def("get_state", [](Iterator& self) {
        State s;
        {
          nb::gil_scoped_release release;
          s = self.get().GetState();
        }
        return StateToPython(s);
      })
      .def("set_state", [](Iterator& self, nb::object state) {
        State s = StateFromPython(state);
        nb::gil_scoped_release release;
        self.get().SetState(s);
      })
      .def("close", [](Iterator& self) {
        self.closed = true;
        nb::gil_scoped_release release;
        self.it.reset();
      });
}

}  // namespace spelt::python
