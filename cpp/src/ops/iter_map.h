// Internal: MapIterDataset, RandomMapIterDataset, MapWithIndexIterDataset (ops/iter_map.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_ITER_MAP_H_
#define SPELT_SRC_OPS_ITER_MAP_H_

#include "core/nodes.h"

namespace spelt::internal {

IterNodePtr MakeIterMapNode(IterNodePtr parent, MapFn fn);
IterNodePtr MakeIterRandomMapNode(IterNodePtr parent, RandomMapFn fn, const AnySeed& seed);
IterNodePtr MakeIterMapWithIndexNode(IterNodePtr parent, MapWithIndexFn fn);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_ITER_MAP_H_
