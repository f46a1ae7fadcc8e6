// SequentialReads (sequential_reads.h).
#include "io/sequential_reads.h"

#include <algorithm>
#include <cstring>

#include "spelt/blocking_wait.h"

namespace spelt::internal {

SequentialReads::SequentialReads(const RandomAccessFile& file, uint64_t window)
    : file_(file),
      window_(file.HighLatency() ? window : 0),
      depth_(window_ == 0 ? 0
                          : static_cast<size_t>(std::max<uint64_t>(
                                1, (file.ReadAheadBytes() + window_ - 1) / window_))) {}

SequentialReads::~SequentialReads() {
  for (Window& window : ahead_) Drop(window);
}

void SequentialReads::Read(uint64_t offset, char* dst, uint64_t n) {
  while (n > 0) {
    if (offset >= buffer_offset_ && offset < buffer_offset_ + buffer_.size) {
      const uint64_t k = std::min<uint64_t>(n, buffer_offset_ + buffer_.size - offset);
      std::memcpy(dst, buffer_.data.get() + (offset - buffer_offset_), k);
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
  Recycle(std::move(buffer_));  // no stale bytes stay if a read throws
  buffer_ = {};
  // A jump: the windows ahead before the one holding `offset` (all of them if none does) are
  // dropped; a forward skip keeps those after it.
  while (!ahead_.empty() &&
         (offset < ahead_.front().offset || offset >= ahead_.front().offset + window_)) {
    Drop(ahead_.front());
    ahead_.pop_front();
  }
  ReadAhead(offset, depth_ + 1);
  Window next = std::move(ahead_.front());
  ahead_.pop_front();
  BlockingWait([&] { next.bytes.wait(); });
  buffer_ = next.bytes.get();
  buffer_offset_ = next.offset;
  ReadAhead(buffer_offset_ + buffer_.size, depth_);
}

void SequentialReads::ReadAhead(uint64_t offset, size_t count) {
  uint64_t at = ahead_.empty() ? offset : ahead_.back().offset + window_;
  while (ahead_.size() < count && at < file_.size()) {
    const uint64_t n = std::min(window_, file_.size() - at);
    ahead_.push_back({at, std::async(std::launch::async, [this, at, n] {
                        Buffer bytes{TakeBuffer(), n};
                        file_.ReadAt(at, bytes.data.get(), n);
                        return bytes;
                      })});
    at += n;
  }
}

void SequentialReads::Drop(Window& window) {
  BlockingWait([&] { window.bytes.wait(); });
  try {
    Recycle(window.bytes.get());
  } catch (...) {  // a window not used: its error is not this reader's
  }
}

std::unique_ptr<char[]> SequentialReads::TakeBuffer() {
  {
    std::lock_guard lock(spare_mu_);
    if (!spare_.empty()) {
      std::unique_ptr<char[]> buffer = std::move(spare_.back());
      spare_.pop_back();
      return buffer;
    }
  }
  return std::unique_ptr<char[]>(new char[window_]);
}

void SequentialReads::Recycle(Buffer buffer) {
  if (buffer.data == nullptr) return;
  std::lock_guard lock(spare_mu_);
  spare_.push_back(std::move(buffer.data));
}

}  // namespace spelt::internal
