// Sequence packing in spelt._core (spelt/packing.h): the engine side of python/spelt/packing.py.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "py_value.h"
#include "spelt/packing.h"

using namespace nanobind::literals;

namespace spelt::python {

void RegisterPacking(nb::module_& m) {
  m.def("pack", [](const IterDataset& parent, nb::handle length_struct, int64_t num_packing_bins,
                   int64_t seed, bool shuffle_bins,
                   std::optional<std::string> shuffle_bins_group_by_feature,
                   std::vector<std::string> meta_features, nb::handle pack_alignment_struct,
                   nb::handle padding_struct, std::optional<int64_t> max_sequences_per_bin,
                   bool best_fit, bool whole_batches) {
    PackOptions o;
    o.strategy = best_fit ? PackStrategy::kBestFit : PackStrategy::kFirstFit;
    o.length_struct = ToValue(length_struct);
    o.num_packing_bins = num_packing_bins;
    o.seed = seed;
    o.shuffle_bins = shuffle_bins;
    o.shuffle_bins_group_by_feature = std::move(shuffle_bins_group_by_feature);
    o.meta_features = std::move(meta_features);
    o.pack_alignment_struct = ToValue(pack_alignment_struct);
    o.padding_struct = ToValue(padding_struct);
    o.max_sequences_per_bin = max_sequences_per_bin;
    o.whole_batches = whole_batches;
    return Pack(parent, std::move(o));
  }, "parent"_a, "length_struct"_a, "num_packing_bins"_a, "seed"_a, "shuffle_bins"_a,
     "shuffle_bins_group_by_feature"_a.none(), "meta_features"_a, "pack_alignment_struct"_a.none(),
     "padding_struct"_a.none(), "max_sequences_per_bin"_a.none(), "best_fit"_a,
     "whole_batches"_a,
     "First-fit / best-fit packing of the parent's sequences into bins (spelt/packing.h).");
  m.def("concat_then_split", [](const IterDataset& parent,
                                std::vector<std::pair<std::string, int64_t>> length_struct,
                                std::vector<std::string> meta_features,
                                bool split_full_length_features,
                                std::vector<std::string> bos_features, int64_t bos_token_id) {
    ConcatThenSplitOptions o;
    o.length_struct = std::move(length_struct);
    o.meta_features = std::move(meta_features);
    o.split_full_length_features = split_full_length_features;
    o.bos_features = std::move(bos_features);
    o.bos_token_id = bos_token_id;
    return ConcatThenSplit(parent, std::move(o));
  }, "parent"_a, "length_struct"_a, "meta_features"_a, "split_full_length_features"_a,
     "bos_features"_a, "bos_token_id"_a,
     "Concatenates the parent's sequences and splits them at target lengths (spelt/packing.h).");
}

}  // namespace spelt::python
