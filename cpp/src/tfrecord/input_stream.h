// Internal: the bytes of a TFRecord file as one stream, decompressed if the file is: the
// reader's view of a file.
#ifndef SPELT_SRC_TFRECORD_INPUT_STREAM_H_
#define SPELT_SRC_TFRECORD_INPUT_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "io/sequential_reads.h"
#include "spelt/file_system.h"
#include "spelt/tfrecord.h"

namespace spelt::internal::tfrecord {

// A forward stream with seeking over a RandomAccessFile. Not thread-safe. Throws what the
// file throws (naming the path), CorruptFileError (naming the compressed byte offset) on bad compressed data.
class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to `n` bytes into `dst` and returns how many; 0 only at the end of the stream.
  virtual size_t Read(char* dst, size_t n) = 0;
  // Continues at byte `offset` of the stream. Throws std::invalid_argument if the stream ends
  // before `offset`. Compressed streams decompress up to `offset` (from the start when it is
  // behind the current position).
  virtual void Seek(uint64_t offset) = 0;
  // Reads up to `n` bytes into `dst` and, once `dst` is full, up to `m` more into `more`, in
  // one call where the stream can (one RandomAccessFile::ReadMany: a preadv(2) for a local
  // file); returns the bytes read, 0 only at the end.
  virtual size_t ReadTwo(char* dst, size_t n, char* more, size_t m);
  // An upper bound of the stream's length, known without reading it: the file size when
  // uncompressed, what deflate's largest ratio allows for a compressed file.
  virtual uint64_t SizeLimit() const = 0;
};

// DetectTFRecordCompression (spelt/tfrecord.h) of an open file, whose first bytes are read
// through `reads` (of `file`) if given: a stream then given `reads` goes on from the window
// that read them (on a remote file, one round trip for both).
TFRecordCompression DetectCompression(const RandomAccessFile& file,
                                      SequentialReads* reads = nullptr);
// The stream of `file` (decompressed if `compression` says so), reading the file through
// `reads` (of `file`; a new one if null).
std::unique_ptr<InputStream> OpenInputStream(std::shared_ptr<const RandomAccessFile> file,
                                             TFRecordCompression compression,
                                             std::unique_ptr<SequentialReads> reads = nullptr);
// A gzip (RFC 1952, several members allowed) or zlib (RFC 1950) stream over `file`, read
// through `reads` (of `file`).
std::unique_ptr<InputStream> MakeZlibInputStream(std::shared_ptr<const RandomAccessFile> file,
                                                 bool gzip,
                                                 std::unique_ptr<SequentialReads> reads);

}  // namespace spelt::internal::tfrecord

#endif  // SPELT_SRC_TFRECORD_INPUT_STREAM_H_
