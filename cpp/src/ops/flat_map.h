// Internal: FlatMapMapDataset (ops/flat_map.cc). The public handles of spelt/dataset.h
// call this factory.
#ifndef SPELT_SRC_OPS_FLAT_MAP_H_
#define SPELT_SRC_OPS_FLAT_MAP_H_

#include "core/nodes.h"

namespace spelt::internal {

// REQUIRES: max_fan_out > 0 (checked by MapDataset::FlatMap).
MapNodePtr MakeFlatMapNode(MapNodePtr parent, FlatMapFn fn, int64_t max_fan_out,
                              bool calls_python);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_FLAT_MAP_H_
