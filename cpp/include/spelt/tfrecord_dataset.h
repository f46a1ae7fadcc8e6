// spelt/tfrecord_dataset.h: a TFRecord file as a stream dataset (Grain's
// grain.experimental.TFRecordIterDataset, grain/_src/python/dataset/sources/
// tfrecord_dataset.py), read natively with every CRC checked (spelt/tfrecord.h).
#ifndef SPELT_TFRECORD_DATASET_H_
#define SPELT_TFRECORD_DATASET_H_

#include <optional>
#include <string>

#include "spelt/dataset.h"
#include "spelt/tfrecord.h"

namespace spelt {

// The records of `path` in file order, as bytes values. nullopt compression detects it.
// The file is opened by MakeIterator() (std::system_error naming it if that fails, as Grain
// fails when iterating). Iterator state: Grain's {kReaderOffsetKey: n} (spelt/tfrecord.h),
// the byte offset of the next record (in the decompressed stream for a gzip / zlib file, where
// restoring decompresses up to it). Next() throws CorruptFileError (spelt/tfrecord.h) on a bad record; SetState
// throws std::invalid_argument for a missing, negative or out-of-file offset.
// `fs` opens the file (null: by its scheme, spelt/file_system.h).
IterDataset TFRecordIterDataset(std::string path,
                                std::optional<TFRecordCompression> compression = std::nullopt,
                                FileSystemPtr fs = nullptr);

}  // namespace spelt

#endif  // SPELT_TFRECORD_DATASET_H_
