// SequentialReads (sequential_reads.h).
#include "io/sequential_reads.h"

#include <algorithm>
#include <cstring>

#include "spelt/blocking_wait.h"

namespace spelt::internal {

SequentialReads::SequentialReads(const RandomAccessFile& file, uint64_t window)
    : file_(file), window_(file.HighLatency() ? window : 0) {}

SequentialReads::~SequentialReads() { TakeNext(false); }

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
    Fill(offset);
  }
}

void SequentialReads::Fill(uint64_t offset) {
  const bool ahead = next_.valid() && offset >= next_offset_ && offset < next_offset_ + next_size_;
  const uint64_t ahead_offset = next_offset_;
  buffer_.clear();  // no stale bytes stay if a read throws
  buffer_ = TakeNext(ahead);
  if (ahead) {
    buffer_offset_ = ahead_offset;
  } else {
    buffer_.resize(std::min(window_, file_.size() - offset));
    file_.ReadAt(offset, buffer_.data(), buffer_.size());
    buffer_offset_ = offset;
  }
  next_offset_ = buffer_offset_ + buffer_.size();
  next_size_ = std::min(window_, file_.size() - next_offset_);
  if (next_size_ == 0) return;
  next_ = std::async(std::launch::async, [&file = file_, at = next_offset_, n = next_size_] {
    std::vector<char> bytes(n);
    file.ReadAt(at, bytes.data(), n);
    return bytes;
  });
}

std::vector<char> SequentialReads::TakeNext(bool keep) {
  if (!next_.valid()) return {};
  BlockingWait([&] { next_.wait(); });
  if (keep) return next_.get();
  try {
    next_.get();
  } catch (...) {  // a window not used: its error is not this reader's
  }
  return {};
}

}  // namespace spelt::internal
