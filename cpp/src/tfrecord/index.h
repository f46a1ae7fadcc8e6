// Internal: the record index of an uncompressed TFRecord file (for TFRecordSource).
#ifndef SPELT_SRC_TFRECORD_INDEX_H_
#define SPELT_SRC_TFRECORD_INDEX_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "io/sequential_reads.h"
#include "spelt/file_system.h"

namespace spelt::internal::tfrecord {

// The byte offset of every record of `file`, then the file's size (so record i spans
// [offsets[i], offsets[i + 1])). Reads the headers only: blocks of the file while records are
// small, a header at a time past large ones. Checks every length CRC and that the last record
// ends exactly at the end of the file; throws CorruptFileError (format "TFRecord") naming
// the file and the record's offset otherwise. `progress(bytes_scanned)` is called every few
// MiB and at the end. `reads` reads `file` (the caller's, so that the compression is detected
// from the scan's first window: one round trip less on a remote file).
std::vector<uint64_t> IndexRecords(const spelt::RandomAccessFile& file, SequentialReads& reads,
                                   const std::function<void(uint64_t)>& progress);

}  // namespace spelt::internal::tfrecord

#endif  // SPELT_SRC_TFRECORD_INDEX_H_
