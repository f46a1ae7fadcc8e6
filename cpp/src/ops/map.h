// Internal: MapMapDataset, RandomMapMapDataset, MapWithIndexMapDataset (ops/map.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_MAP_H_
#define SPELT_SRC_OPS_MAP_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeMapNode(MapNodePtr parent, MapFn fn, bool calls_python);
MapNodePtr MakeRandomMapNode(MapNodePtr parent, RandomMapFn fn, const AnySeed& seed,
                             bool calls_python, MapInto into = {});
MapNodePtr MakeMapWithIndexNode(MapNodePtr parent, MapWithIndexFn fn, bool calls_python,
                                MapInto into = {});

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_MAP_H_
