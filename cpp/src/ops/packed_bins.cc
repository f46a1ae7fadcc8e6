// One batch of packing bins: first-fit and best-fit placement (Grain's FirstFitPackedBatch and
// BestFitPackedBatch in packing_packed_batch.py, same choices bin for bin).
#include "ops/packed_bins.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "spelt/stack.h"

namespace spelt::internal {
namespace {

int64_t LeafInt(const Value& v, const std::string& what) {
  const Value u = v.Unpacked();
  if (u.is<int64_t>()) return u.as<int64_t>();
  if (u.is<Array>() && u.as<Array>().shape.empty()) {
    const Array& a = u.as<Array>();
    int64_t out = 0;
    CastElements(a.dtype, a.data, DType::kInt64, &out, 1);
    return out;
  }
  throw std::invalid_argument(what + " must be an int, got " + u.Describe());
}

// The leaf of `tree` (a struct shaped like length_struct) at `path`; None if tree is None.
Value StructLeaf(const Value& tree, const LeafPath& path, const std::string& what) {
  if (tree.is_none()) return Value();
  const Value* v = FindPath(tree, path);
  if (v == nullptr) {
    throw std::invalid_argument(what + " has no entry for feature '" + PathName(path) +
                                "' of length_struct");
  }
  return *v;
}

}  // namespace

std::shared_ptr<const PackSpec> MakePackSpec(PackOptions options, std::string op_name) {
  auto spec = std::make_shared<PackSpec>();
  const std::string& name = op_name;
  if (options.num_packing_bins <= 0) {
    throw std::invalid_argument(name + ": num_packing_bins must be positive, got " +
                                std::to_string(options.num_packing_bins));
  }
  if (options.max_sequences_per_bin && *options.max_sequences_per_bin <= 0) {
    throw std::invalid_argument(
        "If specified, `max_sequences_per_bin` must be a positive integer, but got " +
        std::to_string(*options.max_sequences_per_bin) + ".");
  }
  if (options.seed < 0) {
    throw std::invalid_argument(name + ": seed must be non-negative, got " +
                                std::to_string(options.seed));
  }
  options.length_struct = options.length_struct.Unpacked();
  options.pack_alignment_struct = options.pack_alignment_struct.Unpacked();
  options.padding_struct = options.padding_struct.Unpacked();
  if (!options.whole_batches && !options.length_struct.is<std::shared_ptr<const Mapping>>()) {
    throw std::invalid_argument(name + ": length_struct must be a dict of feature -> length, got " +
                                options.length_struct.Describe());
  }
  for (auto& [path, leaf] : FlattenTree(options.length_struct)) {
    PackSpec::Feature f;
    f.name = PathName(path);
    f.capacity = LeafInt(leaf, name + ": length_struct['" + f.name + "']");
    if (f.capacity < 0) {
      throw std::invalid_argument(name + ": length_struct['" + f.name + "'] is negative");
    }
    const Value align = StructLeaf(options.pack_alignment_struct, path, "pack_alignment_struct");
    if (!align.is_none()) f.alignment = LeafInt(align, name + ": pack_alignment_struct");
    if (f.alignment <= 0) {
      throw std::invalid_argument(name + ": pack_alignment_struct['" + f.name +
                                  "'] must be positive");
    }
    f.padding = StructLeaf(options.padding_struct, path, "padding_struct");
    f.path = std::move(path);
    spec->features.push_back(std::move(f));
  }
  if (spec->features.empty()) throw std::invalid_argument(name + ": length_struct is empty");
  if (options.length_struct.is<std::shared_ptr<const Mapping>>()) {
    const Mapping& ls = options.length_struct.AsMapping();
    for (const std::string& k : options.meta_features) {
      if (ls.Find(k) == nullptr) spec->non_sequence_meta.push_back(k);
    }
  }
  spec->options = std::move(options);
  spec->op_name = std::move(op_name);
  return spec;
}

PackedBins::PackedBins(std::shared_ptr<const PackSpec> spec, const PackElement& first)
    : spec_(std::move(spec)), bins_(spec_->options.num_packing_bins) {
  const size_t n = spec_->features.size();
  for (size_t f = 0; f < n; ++f) {
    const PackSpec::Feature& feature = spec_->features[f];
    const Tokens& t = first.tokens[f];
    std::vector<int64_t> shape = {bins_, feature.capacity};
    shape.insert(shape.end(), t.trailing.begin(), t.trailing.end());
    values_.push_back(FilledArray(t.leaf.dtype, std::move(shape), feature.padding));
    segment_ids_.push_back(Array::Allocate(DType::kInt32, {bins_, feature.capacity}));
    positions_.push_back(Array::Allocate(DType::kInt32, {bins_, feature.capacity}));
  }
  first_free_.assign(n, std::vector<int64_t>(static_cast<size_t>(bins_), 0));
  sequences_.assign(static_cast<size_t>(bins_), 0);
  meta_.assign(spec_->non_sequence_meta.size(),
               std::vector<std::vector<Value>>(static_cast<size_t>(bins_)));
}

int64_t PackedBins::bins_used() const {
  return std::count_if(sequences_.begin(), sequences_.end(), [](int64_t s) { return s > 0; });
}

int64_t PackedBins::FindBin(const PackElement& element) const {
  const size_t n = spec_->features.size();
  const std::optional<int64_t>& max_sequences = spec_->options.max_sequences_per_bin;
  const bool best_fit = spec_->options.strategy == PackStrategy::kBestFit;
  int64_t best = -1, best_score = -1;
  for (int64_t b = 0; b < bins_; ++b) {
    const auto bin = static_cast<size_t>(b);
    if (max_sequences && sequences_[bin] >= *max_sequences) continue;
    bool fits = true;
    int64_t score = 0;
    for (size_t f = 0; f < n && fits; ++f) {
      fits = element.tokens[f].length + first_free_[f][bin] <= spec_->features[f].capacity;
      score += first_free_[f][bin];
    }
    if (!fits) continue;
    if (!best_fit) return b;
    if (score > best_score) best = b, best_score = score;
  }
  return best;
}

bool PackedBins::TryAdd(const PackElement& element) {
  const size_t n = spec_->features.size();
  for (size_t f = 0; f < n; ++f) {
    const PackSpec::Feature& feature = spec_->features[f];
    if (element.tokens[f].length > feature.capacity) {
      throw std::invalid_argument(
          spec_->op_name + ": feature '" + feature.name + "' of element " +
          std::to_string(element.index) + " has length " +
          std::to_string(element.tokens[f].length) + ", longer than its target length " +
          std::to_string(feature.capacity) +
          " in length_struct (inputs to packing must be truncated to max length)");
    }
  }
  const int64_t bin = FindBin(element);
  if (bin < 0) return false;
  const auto b = static_cast<size_t>(bin);
  const int32_t segment_id = static_cast<int32_t>(sequences_[b] + 1);
  for (size_t f = 0; f < n; ++f) {
    const PackSpec::Feature& feature = spec_->features[f];
    const Tokens& t = element.tokens[f];
    const int64_t start = first_free_[f][b];
    const int64_t at = bin * feature.capacity + start;
    CopyTokens(values_[f], at, t, 0, t.length,
               spec_->op_name + ": feature '" + feature.name + "' of element " +
                   std::to_string(element.index));
    auto* seg = reinterpret_cast<int32_t*>(segment_ids_[f].mutable_data()) + at;
    auto* pos = reinterpret_cast<int32_t*>(positions_[f].mutable_data()) + at;
    for (int64_t i = 0; i < t.length; ++i) {
      seg[i] = segment_id;
      pos[i] = static_cast<int32_t>(i);
    }
    const int64_t end = start + t.length;
    first_free_[f][b] = (end + feature.alignment - 1) / feature.alignment * feature.alignment;
  }
  ++sequences_[b];
  for (size_t k = 0; k < meta_.size(); ++k) meta_[k][b].push_back(element.meta[k]);
  return true;
}

}  // namespace spelt::internal
