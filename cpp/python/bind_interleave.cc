// Reading several streams in turn, in spelt._core: InterleaveIterDataset
// (python/spelt/transformations/interleave.py; ops/interleave.cc) and the round robin over a
// host's virtual shards (python/spelt/virtual_shards.py; spelt/virtual_shards.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "gil.h"
#include "py_value.h"
#include "spelt/virtual_shards.h"

using namespace nanobind::literals;

namespace spelt::python {

void RegisterInterleave(nb::module_& m) {
  auto options = [](int64_t cycle_length, int64_t num_make_iter_threads,
                    int64_t make_iter_buffer_size, int64_t iter_buffer_size) {
    return IterDataset::InterleaveOptions{cycle_length, num_make_iter_threads,
                                          make_iter_buffer_size, iter_buffer_size};
  };
  m.def("interleave", [options](std::vector<IterDataset> datasets, int64_t cycle_length,
                                int64_t num_make_iter_threads, int64_t make_iter_buffer_size,
                                int64_t iter_buffer_size) {
    return IterDataset::Interleave(std::move(datasets),
                                   options(cycle_length, num_make_iter_threads,
                                           make_iter_buffer_size, iter_buffer_size));
  }, "datasets"_a, "cycle_length"_a, "num_make_iter_threads"_a, "make_iter_buffer_size"_a,
     "iter_buffer_size"_a, "Grain's InterleaveIterDataset over a list of datasets.");
  m.def("interleave_lazy", [options](int64_t count, nb::callable dataset_at,
                                     int64_t cycle_length, int64_t num_make_iter_threads,
                                     int64_t make_iter_buffer_size, int64_t iter_buffer_size) {
    auto at = [fn = MakePyRef(dataset_at)](int64_t i) {
      GilAcquire gil;
      return nb::cast<IterDataset>(nb::handle(fn.get())(i));
    };
    return IterDataset::Interleave(count, std::move(at),
                                   options(cycle_length, num_make_iter_threads,
                                           make_iter_buffer_size, iter_buffer_size));
  }, "count"_a, "dataset_at"_a, "cycle_length"_a, "num_make_iter_threads"_a,
     "make_iter_buffer_size"_a, "iter_buffer_size"_a,
     "Grain's InterleaveIterDataset over `count` datasets; dataset_at(i) -> IterDataset is "
     "called (with the GIL) each time dataset i's iterator is made.");
  m.def("virtual_shards", [](std::vector<IterDataset> shards, int64_t num_virtual_shards,
                             int64_t shard_index, int64_t shard_count) {
    return VirtualShards(std::move(shards), num_virtual_shards, shard_index, shard_count);
  }, "shards"_a, "num_virtual_shards"_a, "shard_index"_a, "shard_count"_a,
     "One host's round robin over its virtual shards' pipelines (shards h, h + M, ... < K, in "
     "that order; spelt/virtual_shards.h).");
}

}  // namespace spelt::python
