// Internal: MixedMapDataset (ops/mix.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_MIX_H_
#define SPELT_SRC_OPS_MIX_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeMixNode(std::vector<MapNodePtr> parents,
                       const std::optional<std::vector<double>>& weights);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_MIX_H_
