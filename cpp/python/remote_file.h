// The part that every remote RandomAccessFile of the bindings shares (the Python-backed one,
// py_file_system.h, and the native one, native_file_system.h): the URI, the size and read-ahead
// seen at open, HighLatency, and ReadAt as a batch of one read. Subclasses implement ReadMany.
#ifndef SPELT_PYTHON_REMOTE_FILE_H_
#define SPELT_PYTHON_REMOTE_FILE_H_

#include <cstdint>
#include <string>
#include <utility>

#include "spelt/file_system.h"

namespace spelt::python {

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

}  // namespace spelt::python

#endif  // SPELT_PYTHON_REMOTE_FILE_H_
