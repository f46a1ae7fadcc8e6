// spelt._core: the nanobind module. A thin layer: dataset handles, iterators and samplers of
// libspelt, with Python callables, sources and datasets adapted by py_adapters.h. The Python
// package (python/spelt) builds Grain's API on top of it.
//
// The GIL is released around every call that runs the engine (Next, Get, SetState,
// iterator destruction); adapters take it back only to call Python.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "py_adapters.h"
#include "py_array_record.h"
#include "py_arena.h"
#include "py_value.h"
#include "spelt/stack.h"
#include "spelt/random.h"
#include "spelt/sampler.h"

namespace nb = nanobind;
using namespace nb::literals;

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

struct SamplerHandle {
  std::shared_ptr<const Sampler> sampler;
};

nb::object OptionalToPython(const std::optional<Value>& v) {
  if (!v) return nb::none();
  return ToPython(*v);
}

std::optional<int64_t> OptInt(const nb::object& o) {
  if (o.is_none()) return std::nullopt;
  return nb::cast<int64_t>(o);
}

}  // namespace

NB_MODULE(_core, m) {
  InitPyValue();
  // Engine objects may hold Python references that are deliberately not released while the
  // interpreter shuts down; nanobind would report those as leaks.
  nb::set_leak_warnings(false);
  m.doc() = "libspelt bindings; use the `spelt` package instead of this module.";
  RegisterArrayRecord(m);
  RegisterArena(m);

  m.def("index_shuffle", [](int64_t index, int64_t max_index, int64_t seed, int64_t rounds) {
    if (index < 0 || max_index < 0 || index > max_index) {
      throw std::invalid_argument("index_shuffle: need 0 <= index <= max_index, got index=" +
                                  std::to_string(index) + ", max_index=" +
                                  std::to_string(max_index));
    }
    if (seed < 0 || seed > int64_t{0xFFFFFFFF}) {
      throw std::invalid_argument("index_shuffle: seed must be in [0, 2**32), got " +
                                  std::to_string(seed));
    }
    if (rounds < 4 || rounds > 1024) {
      throw std::invalid_argument("index_shuffle: rounds must be even and in [4, 1024]");
    }
    return static_cast<int64_t>(IndexShuffle(static_cast<uint64_t>(index),
                                             static_cast<uint64_t>(max_index),
                                             static_cast<uint32_t>(seed),
                                             static_cast<uint32_t>(rounds)));
  }, "index"_a, "max_index"_a, "seed"_a, "rounds"_a = 4);

  m.def("stack", [](nb::list elements) {
    std::vector<Value> values;
    for (nb::handle e : elements) values.push_back(ToValue(e));
    Value out;
    {
      nb::gil_scoped_release release;
      out = Stack(values);
    }
    return ToPython(out);
  }, "elements"_a, "Grain's default batch function: stacks leaves along a new axis 0.");

  nb::class_<MapDataset>(m, "MapNode")
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

  nb::class_<IterDataset>(m, "IterNode")
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
        auto out = std::make_unique<Iterator>();
        out->serial = d.node()->Serial();
        {
          nb::gil_scoped_release release;
          out->it = d.MakeIterator();
        }
        return out;
      });

  nb::class_<Iterator>(m, "Iterator")
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

  nb::class_<SamplerHandle>(m, "Sampler")
      .def("__len__", [](const SamplerHandle& s) { return s.sampler->Length(); })
      .def("record_key", [](const SamplerHandle& s, int64_t g) { return s.sampler->RecordKey(g); });

  m.def("index_sampler", [](int64_t num_records, int64_t shard_index, int64_t shard_count,
                            bool drop_remainder, bool shuffle, nb::object num_epochs,
                            nb::object seed) {
    return SamplerHandle{std::make_shared<IndexSampler>(
        num_records, ShardOptions{shard_index, shard_count, drop_remainder}, shuffle,
        OptInt(num_epochs), OptInt(seed))};
  }, "num_records"_a, "shard_index"_a, "shard_count"_a, "drop_remainder"_a, "shuffle"_a,
     "num_epochs"_a.none(), "seed"_a.none());
  m.def("sequential_sampler", [](int64_t num_records, int64_t shard_index, int64_t shard_count,
                                 bool drop_remainder) {
    return SamplerHandle{std::make_shared<SequentialSampler>(
        num_records, ShardOptions{shard_index, shard_count, drop_remainder})};
  });
  m.def("python_sampler", [](nb::object sampler, int64_t shard_index, int64_t shard_count,
                             bool drop_remainder) {
    return SamplerHandle{PySampler(sampler, ShardOptions{shard_index, shard_count, drop_remainder})};
  });
  m.def("sampler_dataset", [](const SamplerHandle& sampler,
                              std::shared_ptr<RandomAccessSource> source, int64_t shard_index,
                              int64_t shard_count) {
    return SamplerDataset(sampler.sampler, std::move(source),
                          ShardOptions{shard_index, shard_count, false});
  });
  m.def("sampler_dataset", [](const SamplerHandle& sampler, nb::object source,
                              int64_t shard_index, int64_t shard_count) {
    return SamplerDataset(sampler.sampler, PySource(source),
                          ShardOptions{shard_index, shard_count, false});
  });
}

}  // namespace spelt::python
