// SequentialReads (sequential_reads.h).
#include "io/sequential_reads.h"

#include <algorithm>
#include <cstring>

namespace spelt::internal {
namespace {

size_t Depth(const RandomAccessFile& file, uint64_t window) {
  if (window == 0) return 0;
  return static_cast<size_t>(std::max<uint64_t>(1, (file.ReadAheadBytes() + window - 1) / window));
}

}  // namespace

SequentialReads::SequentialReads(const RandomAccessFile& file, uint64_t window)
    : file_(file),
      window_(file.HighLatency() ? window : 0),
      depth_(Depth(file, window_)),
      reads_({.max_helpers = static_cast<int>(depth_) + 1,
              .consumer_runs = OrderedWindow::ConsumerRuns::kOldest}) {
  if (window_ > 0) threads_.emplace(SharedThreadPool(), static_cast<int>(depth_) + 1);
}

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
  buffer_ = Buffer();  // back to the pool; no stale bytes stay if a read throws
  // A jump: the windows ahead before the one holding `offset` (all of them if none does) are
  // dropped; a forward skip keeps those after it.
  while (!ahead_.empty() && (offset < ahead_.front().offset ||
                             offset >= ahead_.front().offset + ahead_.front().bytes->size())) {
    reads_.Drop(ahead_.front().task);
    ahead_.pop_front();
  }
  ReadAhead(offset, depth_ + 1);
  const Window next = std::move(ahead_.front());
  ahead_.pop_front();
  reads_.Take();  // `next`'s task: the oldest neither taken nor dropped; rethrows its error
  buffer_ = std::move(*next.bytes);
  buffer_offset_ = next.offset;
  ReadAhead(buffer_offset_ + buffer_.size(), depth_);
}

void SequentialReads::ReadAhead(uint64_t offset, size_t count) {
  uint64_t at = ahead_.empty() ? offset : ahead_.back().offset + ahead_.back().bytes->size();
  while (ahead_.size() < count && at < file_.size()) {
    auto bytes = std::make_shared<Buffer>(std::min(window_, file_.size() - at));
    const uint64_t task = reads_.Submit(
        [&file = file_, bytes, at] { file.ReadAt(at, bytes->data(), bytes->size()); });
    at += bytes->size();
    ahead_.push_back({at - bytes->size(), task, std::move(bytes)});
  }
}

}  // namespace spelt::internal
