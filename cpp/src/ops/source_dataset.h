// Internal: SourceMapDataset: the records of a RandomAccessSource (and Range) (ops/source_dataset.cc). The public
// handles of spelt/dataset.h call this factory.
#ifndef SPELT_SRC_OPS_SOURCE_DATASET_H_
#define SPELT_SRC_OPS_SOURCE_DATASET_H_

#include "core/nodes.h"
#include "spelt/source.h"

namespace spelt::internal {

MapNodePtr MakeSourceNode(std::shared_ptr<const RandomAccessSource> source);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_SOURCE_DATASET_H_
