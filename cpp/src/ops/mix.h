// Internal: MixedMapDataset (ops/mix.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_MIX_H_
#define SPELT_SRC_OPS_MIX_H_

#include <span>

#include "ops/get_many.h"

namespace spelt::internal {

// Grain's _float_to_int_proportions: weights scaled so the smallest is 100, truncated; no
// weights: 1 each. Throws std::invalid_argument on a zero/negative/non-finite weight or a
// count mismatch with n.
std::vector<int64_t> IntProportions(size_t n, const std::optional<std::vector<double>>& weights);

// Grain's _dataset_and_key_of_next_element: element k of the mixture is element `index` of
// parent `parent`.
Route MixRoute(int64_t k, std::span<const int64_t> proportions);

MapNodePtr MakeMixNode(std::vector<MapNodePtr> parents,
                       const std::optional<std::vector<double>>& weights);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_MIX_H_
