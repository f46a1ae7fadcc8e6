// The TFRecord stream handle (spelt/tfrecord_dataset.h): the node of
// sources/tfrecord_dataset.cc.
#include "spelt/tfrecord_dataset.h"

#include <utility>

#include "sources/tfrecord_dataset.h"

namespace spelt {

IterDataset TFRecordIterDataset(std::string path, std::optional<TFRecordCompression> compression,
                                FileSystemPtr fs) {
  return IterDataset(internal::MakeTFRecordNode(std::move(path), compression, std::move(fs)));
}

}  // namespace spelt
