// Internal: MixedIterDataset (ops/iter_mix.cc). The public handles of spelt/dataset.h call
// this factory.
#ifndef SPELT_SRC_OPS_ITER_MIX_H_
#define SPELT_SRC_OPS_ITER_MIX_H_

#include <string>

#include "core/nodes.h"

namespace spelt::internal {

// `keys`: empty for a list of parents (state "parents" is a list), else one key per parent
// (Grain's mapping of parents; state "parents" is an object with these keys). Throws
// std::invalid_argument on no parents, a key count mismatch or bad weights (IntProportions).
IterNodePtr MakeIterMixNode(std::vector<IterNodePtr> parents,
                            const std::optional<std::vector<double>>& weights,
                            std::vector<std::string> keys);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_ITER_MIX_H_
