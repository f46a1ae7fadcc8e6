// Sharding, samplers and the range source in spelt._core: the engine side of
// python/spelt/sharding.py, samplers.py and sources.py (spelt/sampler.h, spelt/source.h).
// Validation is the engine's; this file only converts Python arguments.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <climits>
#include <string>

#include "bindings.h"
#include "py_adapters.h"
#include "spelt/sampler.h"
#include "spelt/source.h"

using namespace nanobind::literals;

namespace spelt::python {
namespace {

// A seed argument: None, or a Python int as int64. Ints beyond int64 are clamped when
// `clamp` (IndexSampler's range check then rejects them with Grain's message), else raise
// OverflowError. Other types raise Grain's TypeError.
std::optional<int64_t> SeedArg(nb::handle seed, bool clamp) {
  if (seed.is_none()) return std::nullopt;
  if (!PyLong_Check(seed.ptr())) {
    throw nb::type_error(("Expected seed of int type. Got seed with type " +
                          nb::cast<std::string>(nb::str(seed.type())))
                             .c_str());
  }
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(seed.ptr(), &overflow);
  if (overflow != 0) {
    if (!clamp) throw std::overflow_error("sampler seed does not fit in 64 bits");
    return overflow > 0 ? INT64_MAX : INT64_MIN;
  }
  return value;
}

std::shared_ptr<Sampler> Mutable(std::shared_ptr<const Sampler> sampler) {
  return std::const_pointer_cast<Sampler>(std::move(sampler));  // nanobind holds non-const
}

}  // namespace

void RegisterSamplers(nb::module_& m) {
  nb::class_<ShardOptions>(m, "ShardOptions")
      .def("__init__", [](ShardOptions* self, int64_t shard_index, int64_t shard_count,
                          bool drop_remainder) {
        ShardOptions options{shard_index, shard_count, drop_remainder};
        options.Validate();
        new (self) ShardOptions(options);
      }, "shard_index"_a, "shard_count"_a, "drop_remainder"_a = false)
      .def_ro("shard_index", &ShardOptions::shard_index)
      .def_ro("shard_count", &ShardOptions::shard_count)
      .def_ro("drop_remainder", &ShardOptions::drop_remainder)
      .def("global_index", &ShardOptions::GlobalIndex, "local_index"_a)
      // (start, end, number of examples dropped by drop_remainder).
      .def("even_split", [](const ShardOptions& options, int64_t num_examples) {
        const auto [start, end] = EvenSplit(num_examples, options);
        const int64_t dropped = options.drop_remainder ? num_examples % options.shard_count : 0;
        return nb::make_tuple(start, end, dropped);
      }, "num_examples"_a)
      .def("__repr__", [](const ShardOptions& options) { return options.Repr(); });

  nb::class_<Sampler>(m, "Sampler")
      .def("__len__", &Sampler::Length)
      .def("record_key", &Sampler::RecordKey, "index"_a)
      .def("rng_key", &Sampler::RngKey, "index"_a)
      // (record key, rng key or None) of sampler index g.
      .def("record", [](const Sampler& sampler, int64_t index) {
        const int64_t key = sampler.RecordKey(index);
        return std::make_pair(key, sampler.RngKey(index));
      }, "index"_a)
      .def_prop_ro("shard_options", &Sampler::shard_options);

  nb::class_<IndexSampler, Sampler>(m, "IndexSampler")
      .def("__init__", [](IndexSampler* self, int64_t num_records,
                          const ShardOptions& shard_options, bool shuffle,
                          std::optional<int64_t> num_epochs, nb::handle seed) {
        if (!seed.is_none() && !PyLong_Check(seed.ptr())) {
          // Grain checks num_records and num_epochs before the seed's type.
          IndexSampler(num_records, shard_options, false, num_epochs);
        }
        new (self) IndexSampler(num_records, shard_options, shuffle, num_epochs,
                                SeedArg(seed, /*clamp=*/true));
      }, "num_records"_a, "shard_options"_a, "shuffle"_a, "num_epochs"_a.none(),
         "seed"_a.none());

  nb::class_<SequentialSampler, Sampler>(m, "SequentialSampler")
      .def("__init__", [](SequentialSampler* self, int64_t num_records,
                          const ShardOptions& shard_options, nb::handle seed) {
        new (self) SequentialSampler(num_records, shard_options, SeedArg(seed, false));
      }, "num_records"_a, "shard_options"_a, "seed"_a.none());

  m.def("python_sampler", [](nb::object sampler, const ShardOptions& shard_options) {
    return Mutable(PySampler(sampler, shard_options));
  }, "sampler"_a, "shard_options"_a);

  m.def("sampler_dataset", [](std::shared_ptr<Sampler> sampler,
                              std::shared_ptr<RandomAccessSource> source,
                              const ShardOptions& shard_options) {
    return SamplerDataset(OwnedByPyRef(std::move(sampler)), OwnedByPyRef(std::move(source)),
                          shard_options);
  }, "sampler"_a, "source"_a, "shard_options"_a);
  m.def("sampler_dataset", [](std::shared_ptr<Sampler> sampler, nb::object source,
                              const ShardOptions& shard_options) {
    return SamplerDataset(OwnedByPyRef(std::move(sampler)), PySource(source), shard_options);
  }, "sampler"_a, "source"_a, "shard_options"_a);

  // A RangeSource, seen from Python as a NativeSource (read without the GIL).
  m.def("range_source", [](int64_t start, int64_t stop, int64_t step) {
    return std::shared_ptr<RandomAccessSource>(std::make_shared<RangeSource>(start, stop, step));
  }, "start"_a, "stop"_a, "step"_a);
}

}  // namespace spelt::python
