// spelt/remote_file.h: the part that remote RandomAccessFiles share (the native one,
// spelt/native_file_system.h, and the Python-backed one of the bindings,
// cpp/python/py_file_system.h): the URI, the size and read-ahead seen at open, HighLatency, and
// ReadAt as a batch of one read. Subclasses implement ReadMany and set size_ and read_ahead_
// when opened. Thread-safety: as RandomAccessFile (spelt/file_system.h).
#ifndef SPELT_REMOTE_FILE_H_
#define SPELT_REMOTE_FILE_H_

#include <cstdint>
#include <string>
#include <utility>

#include "spelt/file_system.h"

namespace spelt {

class RemoteFile : public RandomAccessFile {
 public:
  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }
  bool HighLatency() const override { return true; }  // object stores
  uint64_t ReadAheadBytes() const override { return read_ahead_; }

  void ReadAt(uint64_t offset, char* dst, uint64_t n) const override {
    const ReadRequest request{offset, n, dst};
    ReadMany({&request, 1});
  }

 protected:
  explicit RemoteFile(std::string uri) : path_(std::move(uri)) {}

  std::string path_;
  uint64_t size_ = 0;        // set by the subclass when opened
  uint64_t read_ahead_ = 0;  // RandomAccessFile::ReadAheadBytes, set when opened
};

}  // namespace spelt

#endif  // SPELT_REMOTE_FILE_H_
