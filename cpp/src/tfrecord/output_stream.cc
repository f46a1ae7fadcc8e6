// The uncompressed OutputStream (the buffered AppendFile) and OpenOutputStream.
#include "tfrecord/output_stream.h"

#include <stdexcept>

namespace spelt::internal::tfrecord {
namespace {

class FileOutputStream final : public OutputStream {
 public:
  explicit FileOutputStream(std::unique_ptr<io::AppendFile> file) : file_(std::move(file)) {}
  void Write(std::string_view bytes) override { file_->Append(bytes); }
  void Close() override { file_->Close(); }

 private:
  std::unique_ptr<io::AppendFile> file_;
};

}  // namespace

std::unique_ptr<OutputStream> OpenOutputStream(const std::string& path,
                                               TFRecordCompression compression, int level,
                                               const FileSystemPtr& fs) {
  if (level < -1 || level > 9) {
    throw std::invalid_argument("TFRecordWriter: the zlib level must be -1 or 0-9, got " +
                                std::to_string(level));
  }
  auto file = std::make_unique<io::AppendFile>(path, fs);
  if (compression == TFRecordCompression::kNone) {
    return std::make_unique<FileOutputStream>(std::move(file));
  }
  return MakeZlibOutputStream(std::move(file), path, compression == TFRecordCompression::kGzip,
                              level);
}

}  // namespace spelt::internal::tfrecord
