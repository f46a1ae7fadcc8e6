// Internal: RepeatMapDataset (ops/repeat.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_REPEAT_H_
#define SPELT_SRC_OPS_REPEAT_H_

#include "core/nodes.h"

namespace spelt::internal {

MapNodePtr MakeRepeatNode(MapNodePtr parent, std::optional<int64_t> num_epochs,
                          bool reseed_each_epoch);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_REPEAT_H_
