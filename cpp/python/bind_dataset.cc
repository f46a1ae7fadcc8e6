// MapDataset and IterDataset handles in spelt._core (the engine side of python/spelt/dataset.py).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "py_adapters.h"
#include "py_value.h"

using namespace nanobind::literals;

namespace spelt::python {
namespace {

nb::object OptionalToPython(const std::optional<Value>& v) {
  if (!v) return nb::none();
  return ToPython(*v);
}

}  // namespace

void RegisterDatasets(nb::module_& m) {
  nb::class_<MapDataset>(m, "MapDataset")
      .def("__len__", [](const MapDataset& d) { return d.Length(); })
      .def("name", [](const MapDataset& d) { return d.node()->Name(); })
      .def("serial", [](const MapDataset& d) { return d.node()->Serial(); })
      .def("default_seed", [](const MapDataset& d) { return d.node()->DefaultSeed(); })
      .def("get", [](const MapDataset& d, int64_t index) {
        std::optional<Value> v;
        {
          nb::gil_scoped_release release;
          v = d.Get(index);
        }
        return OptionalToPython(v);
      })
      .def("seed", &MapDataset::Seed)
      .def("shuffle", [](const MapDataset& d, int64_t seed) { return d.Shuffle(seed); })
      .def("slice", [](const MapDataset& d, nb::object start, nb::object stop, nb::object step) {
        return d.Slice(OptInt(start), OptInt(stop), OptInt(step));
      }, "start"_a.none(), "stop"_a.none(), "step"_a.none())
      .def("repeat", [](const MapDataset& d, nb::object n, bool reseed) {
        return d.Repeat(OptInt(n), reseed);
      }, "num_epochs"_a.none(), "reseed_each_epoch"_a)
      .def("map", [](const MapDataset& d, nb::object fn) { return d.Map(PyMapFn(fn), true); })
      .def("random_map", [](const MapDataset& d, nb::object fn, int64_t seed) {
        return d.RandomMap(PyRandomMapFn(fn), seed, true);
      })
      .def("map_with_index", [](const MapDataset& d, nb::object fn) {
        return d.MapWithIndex(PyMapWithIndexFn(fn), true);
      })
      .def("filter", [](const MapDataset& d, nb::object fn) { return d.Filter(PyFilterFn(fn), true); })
      .def("batch", [](const MapDataset& d, int64_t batch_size, bool drop_remainder, nb::object fn) {
        return d.Batch(batch_size, drop_remainder, fn.is_none() ? BatchFn{} : PyBatchFn(fn));
      }, "batch_size"_a, "drop_remainder"_a, "batch_fn"_a.none())
      .def("to_iter", [](const MapDataset& d, int64_t num_threads, int64_t buffer, bool allow_nones) {
        return d.ToIter(ReadOptions{num_threads, buffer}, allow_nones);
      });

  m.def("source", [](std::shared_ptr<RandomAccessSource> source) {
    return MapDataset::Source(std::move(source));
  });
  m.def("source", [](nb::object source) { return MapDataset::Source(PySource(source)); });
  m.def("range", [](int64_t start, int64_t stop, int64_t step) {
    return MapDataset::Range(start, stop, step);
  });
  m.def("concatenate", [](std::vector<MapDataset> datasets) {
    return MapDataset::Concatenate(std::move(datasets));
  }, "datasets"_a);
  m.def("mix", [](std::vector<MapDataset> datasets, std::optional<std::vector<double>> weights) {
    return MapDataset::Mix(std::move(datasets), std::move(weights));
  }, "datasets"_a, "weights"_a.none());
  m.def("python_map_dataset", [](nb::object ds) { return PyMapDataset(ds); });
  m.def("python_iter_dataset", [](nb::object ds, const MapDataset* parent) {
    return PyIterDataset(ds, parent != nullptr ? parent->node() : nullptr);
  }, "dataset"_a, "parent"_a.none() = nb::none());

  nb::class_<IterDataset>(m, "IterDataset")
      .def("name", [](const IterDataset& d) { return d.node()->Name(); })
      .def("default_seed", [](const IterDataset& d) { return d.node()->DefaultSeed(); })
      .def("seed", &IterDataset::Seed)
      .def("map", [](const IterDataset& d, nb::object fn) { return d.Map(PyMapFn(fn)); })
      .def("random_map", [](const IterDataset& d, nb::object fn, int64_t seed) {
        return d.RandomMap(PyRandomMapFn(fn), seed);
      })
      .def("map_with_index", [](const IterDataset& d, nb::object fn) {
        return d.MapWithIndex(PyMapWithIndexFn(fn));
      })
      .def("filter", [](const IterDataset& d, nb::object fn) { return d.Filter(PyFilterFn(fn)); })
      .def("batch", [](const IterDataset& d, int64_t batch_size, bool drop_remainder, nb::object fn) {
        return d.Batch(batch_size, drop_remainder, fn.is_none() ? BatchFn{} : PyBatchFn(fn));
      }, "batch_size"_a, "drop_remainder"_a, "batch_fn"_a.none())
      .def("flat_map", [](const IterDataset& d, nb::object fn) { return d.FlatMap(PyFlatMapFn(fn)); })
      .def("make_iterator", [](const IterDataset& d) {
        std::unique_ptr<DatasetIterator> it;
        {
          nb::gil_scoped_release release;
          it = d.MakeIterator();
        }
        return WrapIterator(std::move(it), d.node()->Serial());
      });
}

}  // namespace spelt::python
