#include "io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

#include "spelt/errors.h"

namespace spelt::internal::io {
namespace {

constexpr size_t kWriteBufferSize = size_t{1} << 20;

[[noreturn]] void ThrowErrno(const std::string& what, const std::string& path) {
  throw std::system_error(errno, std::generic_category(), what + " " + path);
}

}  // namespace

RandomAccessFile::RandomAccessFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) ThrowErrno("cannot open", path_);
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    throw std::system_error(error, std::generic_category(), "cannot stat " + path_);
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

RandomAccessFile::~RandomAccessFile() { ::close(fd_); }

void RandomAccessFile::ReadAt(uint64_t offset, char* dst, uint64_t n) const {
  while (n > 0) {
    const ssize_t got = ::pread(fd_, dst, std::min<uint64_t>(n, size_t{1} << 30),
                                static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      ThrowErrno("cannot read at offset " + std::to_string(offset) + " of", path_);
    }
    if (got == 0) throw CorruptFileError(path_, offset, "unexpected end of file (truncated?)");
    dst += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
}

AppendFile::AppendFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) ThrowErrno("cannot create", path_);
  buffer_.reserve(kWriteBufferSize);
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::Append(std::string_view bytes) {
  if (buffer_.size() + bytes.size() > kWriteBufferSize) {
    Flush();
    if (bytes.size() >= kWriteBufferSize) return WriteFully(bytes);
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
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) ThrowErrno("cannot close", path_);
}

void AppendFile::Flush() {
  WriteFully(buffer_);
  buffer_.clear();
}

void AppendFile::WriteFully(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      ThrowErrno("cannot write", path_);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace spelt::internal::io
