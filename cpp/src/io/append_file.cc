#include "io/append_file.h"

#include <algorithm>

namespace spelt::internal::io {
namespace {

constexpr size_t kWriteBufferSize = size_t{1} << 20;

}  // namespace

AppendFile::AppendFile(const std::string& uri, const FileSystemPtr& fs)
    : file_(OpenWritableFile(uri, fs)) {
  buffer_.reserve(kWriteBufferSize);
}

void AppendFile::Append(std::string_view bytes) {
  if (buffer_.size() + bytes.size() > kWriteBufferSize) {
    Flush();
    if (bytes.size() >= kWriteBufferSize) return file_->Write(bytes);
  }
  buffer_.append(bytes);
}

void AppendFile::AppendZeros(uint64_t n) {
  while (n > 0) {
    if (buffer_.size() == kWriteBufferSize) Flush();
    const uint64_t length = std::min<uint64_t>(n, kWriteBufferSize - buffer_.size());
    buffer_.append(length, '\0');
    n -= length;
  }
}

void AppendFile::Close() {
  Flush();
  file_->Close();
}

void AppendFile::Flush() {
  if (!buffer_.empty()) file_->Write(buffer_);
  buffer_.clear();
}

}  // namespace spelt::internal::io
