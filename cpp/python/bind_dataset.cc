// MapDataset and IterDataset handles in spelt._core (the engine side of python/spelt/_base.py and spelt/transformations/).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "gil.h"
#include "marker_as_none.h"
#include "py_adapters.h"
#include "py_value.h"
#include "spelt/dataset_options.h"
#include "spelt/seeds.h"

using namespace nanobind::literals;

namespace spelt::python {
namespace {

nb::object OptionalToPython(const std::optional<Value>& v) {
  if (!v) return nb::none();
  return ToPython(*v);
}

// The nodes of engine datasets (MapDataset / IterDataset handles); TypeError for anything else.
ParentNodes ParentNodesOf(const std::vector<nb::object>& datasets) {
  ParentNodes nodes;
  for (const nb::object& d : datasets) {
    if (nb::isinstance<MapDataset>(d)) {
      nodes.push_back(nb::cast<const MapDataset&>(d).node());
    } else if (nb::isinstance<IterDataset>(d)) {
      nodes.push_back(nb::cast<const IterDataset&>(d).node());
    } else {
      throw nb::type_error("a parent must be an engine MapDataset or IterDataset");
    }
  }
  return nodes;
}

}  // namespace

// The transformations MapDataset and IterDataset share. Python callables make a MapDataset
// node one that calls Python (computed with the GIL held, see DatasetNode::CallsPython).
template <typename D>
void BindTransformations(nb::class_<D>& cls) {
  constexpr bool kMap = std::is_same_v<D, MapDataset>;
  auto with_calls_python = [](auto&& f) {
    if constexpr (kMap) return f(true);
    else return f();
  };
  cls.def("name", [](const D& d) { return d.node()->Name(); },
          "Grain's class name of the node, e.g. 'ShuffleMapDataset'.")
      .def("resolve_seed", [](const D& d, std::optional<int64_t> seed, const char* what) {
        return ResolveSeed(seed, *d.node(), what);
      }, "seed"_a.none(), "what"_a,
         "The seed of a random transformation `what` on top (spelt/seeds.h): `seed` if given "
         "(ValueError outside [0, 2**32)), else Grain's default seed derived from seed() "
         "upstream (ValueError if there is none).")
      .def("seed", [](const D& d, std::vector<uint32_t> words) {
        return d.Seed(AnySeed(std::move(words)));
      }, "words"_a, "Marks the node as the source of default seeds; the seed (any size) as its "
         "32-bit words, least significant first.")
      .def("map", [=](const D& d, nb::callable fn) {
        return with_calls_python(
            [&](auto... calls_python) { return d.Map(PyMapFn(fn), calls_python...); });
      }, "fn"_a)
      .def("random_map", [=](const D& d, nb::callable fn, std::vector<uint32_t> words) {
        return with_calls_python([&](auto... calls_python) {
          return d.RandomMap(PyRandomMapFn(fn), AnySeed(std::move(words)), calls_python...);
        });
      }, "fn"_a, "words"_a, "fn(element, numpy.random.Generator) with Grain's Philox scheme; "
         "the seed (any size) as its 32-bit words, least significant first.")
      .def("map_with_index", [=](const D& d, nb::callable fn) {
        return with_calls_python(
            [&](auto... calls_python) {
              return d.MapWithIndex(PyMapWithIndexFn(fn), calls_python...);
            });
      }, "fn"_a)
      .def("batch", [](const D& d, int64_t batch_size, bool drop_remainder,
                       std::optional<nb::callable> fn) {
        return d.Batch(batch_size, drop_remainder, fn ? PyBatchFn(*fn) : BatchFn{});
      }, "batch_size"_a, "drop_remainder"_a, "batch_fn"_a.none());
}

void RegisterDatasets(nb::module_& m) {
  nb::class_<MapDataset> map_dataset(m, "MapDataset",
                                     "Engine handle of a MapDataset (spelt/dataset.h).");
  BindTransformations(map_dataset);
  map_dataset
      .def("__len__", [](const MapDataset& d) { return d.Length(); })
      .def("calls_python", [](const MapDataset& d) { return d.node()->CallsPython(); },
           "True if the node calls Python per element (computed with the GIL held).")
      .def("get", [](const MapDataset& d, int64_t index) {
        std::optional<Value> v;
        {
          GilRelease release;
          v = d.Get(index);
        }
        return OptionalToPython(v);
      }, "index"_a, "Element at a global index (>= 0); None if filtered out.")
      .def("get_many", [](const MapDataset& d, std::vector<int64_t> indices) {
        for (const int64_t index : indices) {
          if (index < 0) throw std::out_of_range("index " + std::to_string(index) + " < 0");
        }
        std::vector<std::optional<Value>> values;
        {
          GilRelease release;
          d.node()->GetMany(indices, &values);
        }
        nb::list out;
        for (const std::optional<Value>& v : values) out.append(OptionalToPython(v));
        return out;
      }, "indices"_a, "Elements at global indices (each >= 0), read together (MapNode::GetMany).")
      .def("filter", [](const MapDataset& d, nb::callable fn) {
        return d.Filter(PyFilterFn(fn), /*calls_python=*/true);
      }, "fn"_a)
      .def("shuffle", [](const MapDataset& d, int64_t seed) { return d.Shuffle(seed); },
           "seed"_a)
      .def("window_shuffle", &MapDataset::WindowShuffle, "window_size"_a, "seed"_a,
           "Grain's WindowShuffleMapDataset.")
      .def("flat_map", [](const MapDataset& d, nb::callable fn, int64_t max_fan_out) {
        return d.FlatMap(PyFlatMapFn(fn), max_fan_out, /*calls_python=*/true);
      }, "fn"_a, "max_fan_out"_a, "Grain's FlatMapMapDataset.")
      .def("slice", [](const MapDataset& d, std::optional<int64_t> start,
                       std::optional<int64_t> stop, std::optional<int64_t> step) {
        return d.Slice(start, stop, step);
      }, "start"_a.none(), "stop"_a.none(), "step"_a.none())
      .def("reindex", [](const MapDataset& d,
                         nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>
                             indices) {
        const int64_t* begin = indices.data();
        return d.Reindex(std::vector<int64_t>(begin, begin + indices.shape(0)));
      }, "indices"_a, "Grain's ReindexMapDataset (spelt/dataset.h Reindex): element k is the "
         "element at indices[k % len(indices)]; indices: a 1-D C-contiguous int64 array.")
      .def("repeat", [](const MapDataset& d, std::optional<int64_t> n, bool reseed) {
        return d.Repeat(n, reseed);
      }, "num_epochs"_a.none(), "reseed_each_epoch"_a)
      .def("to_iter", [](const MapDataset& d, int64_t num_threads, int64_t prefetch_buffer_size,
                         bool allow_nones) {
        return d.ToIter(ReadOptions{num_threads, prefetch_buffer_size}, allow_nones);
      }, "num_threads"_a, "prefetch_buffer_size"_a, "allow_nones"_a,
         "Grain's to_iter_dataset: ordered read-ahead (spelt/executor.h).");
  map_dataset.def("as_stream", [](const MapDataset& d) { return d.AsStream(); },
                  "This dataset read by an IterDataset operation (spelt/dataset.h AsStream).");

  m.def("source", [](std::shared_ptr<RandomAccessSource> source) {
    return MapDataset::Source(OwnedByPyRef(std::move(source)));
  }, "source"_a);
  m.def("source", [](nb::object source) { return MapDataset::Source(PySource(source)); },
        "source"_a, "A MapDataset over any object with __len__ and __getitem__.");
  m.def("seed_words", [](nb::int_ seed, const char* what) {
    return ParseAnySeed(nb::str(seed).c_str(), what).words();
  }, "seed"_a, "what"_a,
     "The 32-bit words of a seed of any size (ds.seed(), random_map), least significant first, "
     "as numpy splits an int (spelt/seeds.h): ValueError naming `what` if negative.");
  m.def("range", [](int64_t start, int64_t stop, int64_t step) {
    return MapDataset::Range(start, stop, step);
  }, "start"_a, "stop"_a, "step"_a);
  m.def("concatenate", [](std::vector<MapDataset> datasets) {
    return MapDataset::Concatenate(std::move(datasets));
  }, "datasets"_a);
  m.def("mix", [](std::vector<MapDataset> datasets, std::optional<std::vector<double>> weights) {
    return MapDataset::Mix(std::move(datasets), std::move(weights));
  }, "datasets"_a, "weights"_a.none());
  m.def("zip", [](std::vector<MapDataset> datasets) {
    return MapDataset::Zip(std::move(datasets));
  }, "datasets"_a, "Grain's ZipMapDataset.");
  m.def("zip_iter", [](std::vector<IterDataset> datasets, bool strict) {
    return IterDataset::Zip(std::move(datasets), strict);
  }, "datasets"_a, "strict"_a, "Grain's ZipIterDataset.");
  m.def("mix_iter", [](std::vector<IterDataset> datasets,
                       std::optional<std::vector<double>> weights,
                       std::vector<std::string> keys) {
    return IterDataset::Mix(std::move(datasets), std::move(weights), std::move(keys));
  }, "datasets"_a, "weights"_a.none(), "keys"_a,
     "Grain's MixedIterDataset; keys: one per dataset for a mapping of parents, or empty.");
  m.def("python_map_dataset", [](nb::object ds, const std::vector<nb::object>& parents) {
    return PyMapDataset(ds, ParentNodesOf(parents));
  }, "dataset"_a, "parents"_a,
     "A user's MapDataset subclass (__len__, __getitem__) as an engine node; parents: the "
     "engine datasets (MapDataset / IterDataset) of its parents.");
  m.def("python_iter_dataset", [](nb::object ds, const std::vector<nb::object>& parents) {
    return PyIterDataset(ds, ParentNodesOf(parents));
  }, "dataset"_a, "parents"_a,
     "A user's IterDataset subclass (__iter__ -> DatasetIterator) as an engine node; parents: "
     "the engine datasets (MapDataset / IterDataset) of its parents.");

  nb::class_<IterDataset> iter_dataset(m, "IterDataset",
                                       "Engine handle of an IterDataset (spelt/dataset.h).");
  BindTransformations(iter_dataset);
  iter_dataset
      .def("filter", [](const IterDataset& d, nb::callable fn, std::string transform_name) {
        return d.Filter(PyFilterFn(fn), std::move(transform_name));
      }, "fn"_a, "transform_name"_a)
      .def("flat_map", [](const IterDataset& d, nb::callable fn) {
        return d.FlatMap(PyFlatMapFn(fn));
      }, "fn"_a)
      .def("window_shuffle", &IterDataset::WindowShuffle, "window_size"_a, "seed"_a,
           "Grain's WindowShuffleIterDataset.")
      .def("marker_as_none", &MarkerAsNone, "marker"_a, "Each element that is the object `marker` (by identity) becomes None, the "
         "rest pass unchanged; a MapIterDataset node whose function runs no Python.")
      .def("with_options", &IterDataset::WithOptions,
           "Grain's WithOptionsIterDataset level (for default-seed derivation).")
      .def("rebatch", &IterDataset::Rebatch, "batch_size"_a, "drop_remainder"_a,
           "Grain's RebatchIterDataset.")
      .def("limit", &IterDataset::Limit, "count"_a, "Grain's LimitIterDataset.")
      .def("repeat", &IterDataset::Repeat, "num_epochs"_a.none(), "Grain's RepeatIterDataset.")
      .def("make_iterator", [](const IterDataset& d, std::optional<double> warn_ratio,
                               std::optional<double> raise_ratio, std::optional<nb::callable> warn) {
        DatasetOptions options{warn_ratio, raise_ratio, warn ? PyWarnFn(*warn) : nullptr};
        std::unique_ptr<DatasetIterator> it;
        {
          GilRelease release;
          it = MakeIterator(d, std::move(options));
        }
        return WrapIterator(std::move(it), d.node()->CallsPython());
      }, "filter_warn_threshold_ratio"_a.none() = 0.9,
         "filter_raise_threshold_ratio"_a.none() = nb::none(), "warn"_a.none() = nb::none(),
         nb::sig("def make_iterator(self, filter_warn_threshold_ratio: float | None = 0.9, "
                 "filter_raise_threshold_ratio: float | None = None, warn: "
                 "collections.abc.Callable[[str], None] | None = None) -> DatasetIterator"),
         "An iterator whose filters check these thresholds (spelt/dataset_options.h); `warn` "
         "receives the warnings (None: stderr).");
  m.def("with_filter_thresholds",
        [](const IterDataset& d, bool warn_set, std::optional<double> warn, bool raise_set,
           std::optional<double> raise) {
          FilterThresholds thresholds;
          if (warn_set) thresholds.filter_warn_threshold_ratio = warn;
          if (raise_set) thresholds.filter_raise_threshold_ratio = raise;
          return WithFilterThresholds(d, thresholds);
        }, "dataset"_a, "warn_set"_a, "warn"_a.none(), "raise_set"_a, "raise_"_a.none(),
        "The thresholds a pipeline sets for itself, over those of the iterator that makes it "
        "(spelt/dataset_options.h WithFilterThresholds).");
}

}  // namespace spelt::python
