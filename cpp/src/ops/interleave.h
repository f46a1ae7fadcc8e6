// Internal: InterleaveIterDataset (ops/interleave.cc). IterDataset::Interleave calls this
// factory.
#ifndef SPELT_SRC_OPS_INTERLEAVE_H_
#define SPELT_SRC_OPS_INTERLEAVE_H_

#include <functional>

#include "core/nodes.h"
#include "spelt/interleave.h"

namespace spelt::internal {

// `node_at(i)`: the node of dataset i, called each time its iterator is made (possibly from a
// thread of the iterator). REQUIRES: count >= 0 and valid options (checked by
// IterDataset::Interleave).
IterNodePtr MakeInterleaveNode(int64_t count, std::function<IterNodePtr(int64_t)> node_at,
                               InterleaveOptions options);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_INTERLEAVE_H_
