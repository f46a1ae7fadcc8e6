// The uncompressed InputStream (reads with read(2); the reader buffers) and OpenInputStream.
#include "tfrecord/input_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace spelt::internal::tfrecord {
namespace {

[[noreturn]] void ThrowErrno(const std::string& what, const std::string& path) {
  throw std::system_error(errno, std::generic_category(), what + " " + path);
}

class FileInputStream final : public InputStream {
 public:
  FileInputStream(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
    struct stat st;
    if (::fstat(fd_, &st) != 0) {
      const int error = errno;
      ::close(fd_);
      throw std::system_error(error, std::generic_category(), "cannot stat " + path_);
    }
    size_ = static_cast<uint64_t>(st.st_size);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~FileInputStream() override { ::close(fd_); }

  size_t Read(char* dst, size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, dst, std::min(n, size_t{1} << 30));
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) ThrowErrno("cannot read", path_);
    }
  }

  void Seek(uint64_t offset) override {
    if (offset > size_) {
      throw std::invalid_argument(path_ + ": cannot seek to offset " + std::to_string(offset) +
                                  ", the file has " + std::to_string(size_) + " bytes");
    }
    if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) ThrowErrno("cannot seek", path_);
  }

  size_t ReadTwo(char* dst, size_t n, char* more, size_t m) override {
    iovec parts[2] = {{dst, std::min(n, size_t{1} << 30)}, {more, m}};
    for (;;) {
      const ssize_t got = ::readv(fd_, parts, 2);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) ThrowErrno("cannot read", path_);
    }
  }

  // The size when opened (a file that grows later is read to its end all the same).
  uint64_t SizeLimit() const override { return size_; }

 private:
  int fd_;
  std::string path_;
  uint64_t size_ = 0;
};

}  // namespace

size_t InputStream::ReadTwo(char* dst, size_t n, char* more, size_t m) {
  const size_t got = Read(dst, n);
  return got < n ? got : got + Read(more, m);
}

std::unique_ptr<InputStream> OpenInputStream(const std::string& path,
                                             TFRecordCompression compression) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowErrno("cannot open", path);
  if (compression == TFRecordCompression::kNone) {
    return std::make_unique<FileInputStream>(fd, path);
  }
  return MakeZlibInputStream(fd, path, compression == TFRecordCompression::kGzip);
}

}  // namespace spelt::internal::tfrecord
