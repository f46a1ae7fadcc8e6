// Internal: one batch of packing bins (Grain's PackedBatch, packing_packed_batch.py): fixed
// buffers of num_packing_bins rows per feature into which first-fit or best-fit places whole
// sequences, with their segment ids and positions. Used by ops/pack.cc.
#ifndef SPELT_SRC_OPS_PACKED_BINS_H_
#define SPELT_SRC_OPS_PACKED_BINS_H_

#include <memory>
#include <string>
#include <vector>

#include "ops/pack_buffers.h"
#include "spelt/packing_options.h"

namespace spelt::internal {

// PackOptions resolved once per dataset.
struct PackSpec {
  struct Feature {
    LeafPath path;         // from the element's root; path[0] is the top-level key
    std::string name;      // PathName(path), for messages
    int64_t capacity = 0;  // target length
    int64_t alignment = 1;
    Value padding;         // None: 0
  };
  PackOptions options;
  std::string op_name;                          // Grain's class name, for messages
  std::vector<Feature> features;                // leaves of length_struct, depth first
  std::vector<std::string> non_sequence_meta;   // meta_features not in length_struct
};

// Validates `options` (std::invalid_argument naming the option) and resolves the features.
std::shared_ptr<const PackSpec> MakePackSpec(PackOptions options, std::string op_name);

// The sequence features (in PackSpec::features order) and non-sequence meta values of one
// element.
struct PackElement {
  std::vector<Tokens> tokens;
  std::vector<Value> meta;
  int64_t index = 0;  // position in the parent stream since the iterator started or restored
};

class PackedBins {
 public:
  // Empty bins whose dtypes and token shapes are those of `first` (as Grain's
  // element_for_shapes).
  PackedBins(std::shared_ptr<const PackSpec> spec, const PackElement& first);
  PackedBins(const PackedBins&) = delete;
  PackedBins& operator=(const PackedBins&) = delete;

  // Puts `element` into a bin chosen by the strategy and returns true, or returns false if it
  // fits in none. Throws std::invalid_argument naming the feature and element if a feature is
  // longer than its target length or its tokens differ in shape from the bins'.
  bool TryAdd(const PackElement& element);

  // Bins holding at least one sequence (Grain emits only those).
  int64_t bins_used() const;
  // Per feature: (num_packing_bins, capacity, ...) values, int32 (num_packing_bins, capacity)
  // segment ids and positions. Writable until the bins are emitted.
  const std::vector<Array>& values() const { return values_; }
  const std::vector<Array>& segment_ids() const { return segment_ids_; }
  const std::vector<Array>& positions() const { return positions_; }
  // meta()[k][bin]: the values of non-sequence meta feature k of the sequences in `bin`.
  const std::vector<std::vector<std::vector<Value>>>& meta() const { return meta_; }

 private:
  int64_t FindBin(const PackElement& element) const;

  std::shared_ptr<const PackSpec> spec_;
  int64_t bins_;
  std::vector<Array> values_, segment_ids_, positions_;
  std::vector<std::vector<int64_t>> first_free_;  // [feature][bin]
  std::vector<int64_t> sequences_;                // per bin
  std::vector<std::vector<std::vector<Value>>> meta_;
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_PACKED_BINS_H_
