// LocalFileSystem (spelt/file_system.h): pread(2) on one descriptor per file, contiguous
// requests of a batch gathered into one preadv(2); writes with write(2).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "spelt/errors.h"
#include "spelt/file_system.h"

namespace spelt {
namespace {

constexpr uint64_t kMaxSyscallBytes = uint64_t{1} << 30;

[[noreturn]] void ThrowErrno(int error, const std::string& what, const std::string& path) {
  throw std::system_error(error, std::generic_category(), what + " " + path);
}

// The local path of `uri`: itself for a plain path, the path part of a file:// URI.
std::string LocalPath(const std::string& uri) {
  if (UriScheme(uri) != "file") return uri;
  std::string_view rest = std::string_view(uri).substr(7);  // after "file://"
  const size_t slash = rest.find('/');
  const std::string_view host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost") {
    throw std::invalid_argument(uri + ": names host \"" + std::string(host) +
                                "\"; file:// URIs must be local");
  }
  return slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
}

class LocalFile final : public RandomAccessFile {
 public:
  explicit LocalFile(std::string uri) : path_(std::move(uri)) {
    fd_ = ::open(LocalPath(path_).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) ThrowErrno(errno, "cannot open", path_);
    struct stat st;
    if (::fstat(fd_, &st) != 0) {
      const int error = errno;
      ::close(fd_);
      ThrowErrno(error, "cannot stat", path_);
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~LocalFile() override { ::close(fd_); }

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }

  void ReadAt(uint64_t offset, char* dst, uint64_t n) const override {
    iovec part{dst, n};
    ReadFully(offset, &part, 1);
  }

  void ReadMany(std::span<const ReadRequest> requests) const override {
    std::vector<iovec> parts;
    for (size_t i = 0; i < requests.size();) {
      // The longest run of requests that continue each other.
      parts.clear();
      uint64_t end = requests[i].offset;
      size_t j = i;
      for (; j < requests.size() && requests[j].offset == end && parts.size() < IOV_MAX; ++j) {
        parts.push_back({requests[j].dst, requests[j].length});
        end += requests[j].length;
      }
      ReadFully(requests[i].offset, parts.data(), parts.size());
      i = j;
    }
  }

 private:
  // Fills `parts` (consumed as they fill) from `offset` on.
  void ReadFully(uint64_t offset, iovec* parts, size_t count) const {
    while (count > 0 && parts->iov_len == 0) ++parts, --count;
    while (count > 0) {
      ssize_t got;
      if (count == 1) {
        got = ::pread(fd_, parts->iov_base, std::min<uint64_t>(parts->iov_len, kMaxSyscallBytes),
                      static_cast<off_t>(offset));
      } else {
        got = ::preadv(fd_, parts, static_cast<int>(count), static_cast<off_t>(offset));
      }
      if (got < 0) {
        if (errno == EINTR) continue;
        ThrowErrno(errno, "cannot read at offset " + std::to_string(offset) + " of", path_);
      }
      if (got == 0) throw CorruptFileError(path_, offset, "unexpected end of file (truncated?)");
      offset += static_cast<uint64_t>(got);
      for (auto left = static_cast<size_t>(got); left > 0;) {
        const size_t n = std::min(left, parts->iov_len);
        parts->iov_base = static_cast<char*>(parts->iov_base) + n;
        parts->iov_len -= n;
        left -= n;
        if (parts->iov_len == 0) ++parts, --count;
      }
      while (count > 0 && parts->iov_len == 0) ++parts, --count;
    }
  }

  std::string path_;
  int fd_;
  uint64_t size_;
};

class LocalWritableFile final : public WritableFile {
 public:
  explicit LocalWritableFile(std::string uri) : path_(std::move(uri)) {
    fd_ = ::open(LocalPath(path_).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) ThrowErrno(errno, "cannot create", path_);
  }
  ~LocalWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  const std::string& path() const override { return path_; }

  void Write(std::string_view bytes) override {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), std::min<size_t>(bytes.size(), kMaxSyscallBytes));
      if (n < 0) {
        if (errno == EINTR) continue;
        ThrowErrno(errno, "cannot write", path_);
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  void Close() override {
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) ThrowErrno(errno, "cannot close", path_);
  }

 private:
  std::string path_;
  int fd_;
};

class Local final : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> OpenForRead(const std::string& uri) const override {
    return std::make_unique<LocalFile>(uri);
  }
  std::unique_ptr<WritableFile> OpenForWrite(const std::string& uri) const override {
    return std::make_unique<LocalWritableFile>(uri);
  }
};

}  // namespace

const FileSystemPtr& LocalFileSystem() {
  static const FileSystemPtr* const fs = new FileSystemPtr(std::make_shared<Local>());
  return *fs;
}

}  // namespace spelt
