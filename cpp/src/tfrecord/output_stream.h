// Internal: where the TFRecord writer's bytes go: the file, compressed if asked.
#ifndef SPELT_SRC_TFRECORD_OUTPUT_STREAM_H_
#define SPELT_SRC_TFRECORD_OUTPUT_STREAM_H_

#include <memory>
#include <string>
#include <string_view>

#include "io/append_file.h"
#include "spelt/tfrecord.h"

namespace spelt::internal::tfrecord {

// Not thread-safe. Throws what the file throws (naming the path).
class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual void Write(std::string_view bytes) = 0;
  // Ends the (compressed) stream and closes the file.
  virtual void Close() = 0;
};

// Creates or truncates `path` with `fs` (null: by its scheme). `level`: zlib's compression
// level (-1 for its default).
std::unique_ptr<OutputStream> OpenOutputStream(const std::string& path,
                                               TFRecordCompression compression, int level,
                                               const FileSystemPtr& fs = nullptr);
// A gzip (RFC 1952) or zlib (RFC 1950) stream into `file`.
std::unique_ptr<OutputStream> MakeZlibOutputStream(std::unique_ptr<io::AppendFile> file,
                                                   std::string path, bool gzip, int level);

}  // namespace spelt::internal::tfrecord

#endif  // SPELT_SRC_TFRECORD_OUTPUT_STREAM_H_
