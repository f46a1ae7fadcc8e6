// Internal: TFRecordIterDataset's node (sources/tfrecord_dataset.cc); TFRecordIterDataset
// (spelt/tfrecord_dataset.h) calls this factory.
#ifndef SPELT_SRC_SOURCES_TFRECORD_DATASET_H_
#define SPELT_SRC_SOURCES_TFRECORD_DATASET_H_

#include <optional>
#include <string>

#include "core/nodes.h"
#include "spelt/tfrecord.h"

namespace spelt::internal {

// The records of `path` in file order (see TFRecordIterDataset).
IterNodePtr MakeTFRecordNode(std::string path, std::optional<TFRecordCompression> compression,
                             FileSystemPtr fs);

}  // namespace spelt::internal

#endif  // SPELT_SRC_SOURCES_TFRECORD_DATASET_H_
