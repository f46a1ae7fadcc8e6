// Internal: InterleaveIterDataset (ops/interleave.cc). IterDataset::Interleave calls this
// factory.
#ifndef SPELT_SRC_OPS_INTERLEAVE_H_
#define SPELT_SRC_OPS_INTERLEAVE_H_

#include <functional>

#include "core/nodes.h"
#include "spelt/dataset.h"

namespace spelt::internal {

// REQUIRES: count >= 0 and valid options (checked by IterDataset::Interleave).
IterNodePtr MakeInterleaveNode(int64_t count, std::function<IterDataset(int64_t)> dataset_at,
                               IterDataset::InterleaveOptions options);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_INTERLEAVE_H_
