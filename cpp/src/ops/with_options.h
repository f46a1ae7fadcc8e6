// Internal: seed(): marks a node as the source of default seeds (ops/with_options.cc); without a
// seed, Grain's WithOptionsIterDataset level. The public handles of spelt/dataset.h call these
// factories.
#ifndef SPELT_SRC_OPS_WITH_OPTIONS_H_
#define SPELT_SRC_OPS_WITH_OPTIONS_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeSeedMapNode(MapNodePtr parent, std::vector<uint32_t> seed);
IterNodePtr MakeSeedIterNode(IterNodePtr parent, std::optional<std::vector<uint32_t>> seed);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_WITH_OPTIONS_H_
