// Internal: to_iter_dataset().batch(n) computed as whole batches by the read-ahead threads
// (ops/batched_read_ahead.cc). PrefetchIterDataset offers it through
// IterNode::MakeBatchIterator.
#ifndef SPELT_SRC_OPS_BATCHED_READ_AHEAD_H_
#define SPELT_SRC_OPS_BATCHED_READ_AHEAD_H_

#include <functional>
#include <memory>

#include "core/nodes.h"
#include "spelt/read_options.h"

namespace spelt::internal {

// Batches of `batch_size` consecutive elements of `parent` (the last one partial unless
// `drop_remainder`), stacked and read ahead on the process-wide pool (computed in the calling
// thread where `options` allow no threads), about options.prefetch_buffer_size elements ahead
// in whole batches, and at least 4 MiB of batches once the first is seen: the elements, states and
// errors of BatchIterDataset over PrefetchIterDataset (state {"next_index": n}, n the parent
// elements consumed), which `elementwise()` makes and which takes over after an error.
// REQUIRES: parent calls no Python (CallsPython()) and has no filter.
std::unique_ptr<DatasetIterator> MakeBatchedReadAheadIterator(
    MapNodePtr parent, ReadOptions options, int64_t batch_size, bool drop_remainder,
    std::function<std::unique_ptr<DatasetIterator>()> elementwise);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_BATCHED_READ_AHEAD_H_
