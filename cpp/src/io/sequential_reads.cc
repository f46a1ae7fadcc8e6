// SequentialReads (sequential_reads.h).
#include "io/sequential_reads.h"

#include <algorithm>
#include <cstring>

namespace spelt::internal {

SequentialReads::SequentialReads(const RandomAccessFile& file, uint64_t window)
    : file_(file), window_(file.HighLatency() ? window : 0) {}

void SequentialReads::Read(uint64_t offset, char* dst, uint64_t n) {
  while (n > 0) {
    if (offset >= buffer_offset_ && offset < buffer_offset_ + buffer_.size()) {
      const uint64_t k = std::min<uint64_t>(n, buffer_offset_ + buffer_.size() - offset);
      std::memcpy(dst, buffer_.data() + (offset - buffer_offset_), k);
      offset += k, dst += k, n -= k;
      continue;
    }
    if (n >= window_ || offset >= file_.size()) {
      file_.ReadAt(offset, dst, n);  // large, local, or past the end (the file's error)
      return;
    }
    buffer_.clear();  // no stale bytes stay if the read throws
    buffer_.resize(std::min(window_, file_.size() - offset));
    file_.ReadAt(offset, buffer_.data(), buffer_.size());
    buffer_offset_ = offset;
  }
}

}  // namespace spelt::internal
