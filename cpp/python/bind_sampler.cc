// Samplers in spelt._core (the engine side of python/spelt/samplers.py).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "py_adapters.h"
#include "spelt/sampler.h"

using namespace nanobind::literals;

namespace spelt::python {
namespace {

struct SamplerHandle {
  std::shared_ptr<const Sampler> sampler;
};

}  // namespace

void RegisterSamplers(nb::module_& m) {
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
