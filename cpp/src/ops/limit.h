// Internal: LimitIterDataset (ops/limit.cc). The public handles of spelt/dataset.h call this
// factory.
#ifndef SPELT_SRC_OPS_LIMIT_H_
#define SPELT_SRC_OPS_LIMIT_H_

#include "core/nodes.h"

namespace spelt::internal {

// REQUIRES: count > 0 (checked by IterDataset::Limit).
IterNodePtr MakeLimitNode(IterNodePtr parent, int64_t count);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_LIMIT_H_
