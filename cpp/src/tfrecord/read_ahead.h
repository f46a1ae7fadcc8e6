// Internal: a TFRecordReader that reads ahead of its caller. The next runs of whole records
// (about kRunBytes of payload each, at most kWindow - 1 runs ahead) are read and checked as
// the tasks of a serial base/ordered_window.h (the framing is sequential, so one thread at a
// time reads), on a helper from SharedThreadPool() while the caller takes the records of the
// current run; when no run is ready and no thread is reading one, the caller reads the next
// run itself, so it never waits for a pool thread that does not come.
#ifndef SPELT_SRC_TFRECORD_READ_AHEAD_H_
#define SPELT_SRC_TFRECORD_READ_AHEAD_H_

#include <cstddef>
#include <memory>

#include "spelt/tfrecord.h"

namespace spelt::internal::tfrecord {

// A run ends once it holds this many payload bytes (a larger record is a run alone).
inline constexpr size_t kRunBytes = size_t{1} << 20;
// Runs held at once: the one being consumed and those read ahead.
inline constexpr size_t kWindow = 4;

// The records of `reader` (a plain reader that nothing else uses), read ahead; the
// TFRecordReader contract, errors included (a bad record fails when the records before it
// have been read, and the reader then stays at it). Memory: kWindow buffers of
// max(kRunBytes, the largest record) bytes. Destroying it waits for a run being read.
std::unique_ptr<TFRecordReader> MakeReadAheadReader(std::unique_ptr<TFRecordReader> reader);

}  // namespace spelt::internal::tfrecord

#endif  // SPELT_SRC_TFRECORD_READ_AHEAD_H_
