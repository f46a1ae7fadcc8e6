// Internal: RepeatIterDataset (ops/iter_repeat.cc). The public handles of spelt/dataset.h call
// this factory.
#ifndef SPELT_SRC_OPS_ITER_REPEAT_H_
#define SPELT_SRC_OPS_ITER_REPEAT_H_

#include "core/nodes.h"

namespace spelt::internal {

// num_epochs: nullopt repeats forever. REQUIRES: num_epochs > 0 (IterDataset::Repeat checks).
IterNodePtr MakeIterRepeatNode(IterNodePtr parent, std::optional<int64_t> num_epochs);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_ITER_REPEAT_H_
