// Internal: BatchMapDataset and BatchIterDataset (ops/batch.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_BATCH_H_
#define SPELT_SRC_OPS_BATCH_H_

#include "core/nodes.h"

namespace spelt::internal {

// How BatchMapDataset combines elements that are None. By default (Grain's MapDataset.batch)
// a None element is a None leaf of its batch. For MakeBatchesFromNode
// (spelt/batched_read_ahead.h): with `raise`, a None element raises std::invalid_argument, and
// an element that `is_marker` accepts is the batch's None leaf instead.
struct BatchNones {
  bool raise = false;
  std::function<bool(const Value&)> is_marker;
};

MapNodePtr MakeBatchMapNode(MapNodePtr parent, int64_t batch_size, bool drop_remainder,
                            BatchFn fn, BatchNones nones = {});
IterNodePtr MakeBatchIterNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder,
                              BatchFn fn);

// Grain's BatchDatasetIterator get/set_next_index: the batches that hold the parent's first
// `parent_index` elements (ceil(parent_index / batch_size)), and the parent index of the first
// element of batch `index` (index * batch_size; std::out_of_range beyond int64).
int64_t BatchesBefore(int64_t parent_index, int64_t batch_size);
int64_t FirstOfBatch(int64_t index, int64_t batch_size);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_BATCH_H_
