// Internal: Grain's WithOptionsMapDataset / WithOptionsIterDataset (ops/with_options.cc),
// pass-through nodes: with a seed, what seed() makes (the source of default seeds); without one,
// IterDataset::WithOptions()'s level. The public handles of spelt/dataset.h call these
// factories.
#ifndef SPELT_SRC_OPS_WITH_OPTIONS_H_
#define SPELT_SRC_OPS_WITH_OPTIONS_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeWithOptionsMapNode(MapNodePtr parent, std::vector<uint32_t> seed);
IterNodePtr MakeWithOptionsIterNode(IterNodePtr parent,
                                    std::optional<std::vector<uint32_t>> seed);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_WITH_OPTIONS_H_
