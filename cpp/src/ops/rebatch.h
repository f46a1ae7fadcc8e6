// Internal: RebatchIterDataset (ops/rebatch.cc). The public handles of spelt/dataset.h call
// this factory.
#ifndef SPELT_SRC_OPS_REBATCH_H_
#define SPELT_SRC_OPS_REBATCH_H_

#include "core/nodes.h"

namespace spelt::internal {

// REQUIRES: batch_size > 0 (checked by IterDataset::Rebatch).
IterNodePtr MakeRebatchNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_REBATCH_H_
