// ChunkSizer (exec/chunk_sizer.h).
#include "exec/chunk_sizer.h"

#include <algorithm>

#include "spelt/stage_stats.h"

namespace spelt::internal {

int64_t ChunkSizer::Next() {
  int64_t size = next_;
  next_ = std::min(2 * next_, max_ * widen_elements_);
  if (element_bytes_ < 0) return std::min(size, kUnsizedChunk);
  if (element_bytes_ > 0) {
    size = std::clamp<int64_t>(kChunkBytes * widen_ / element_bytes_, 1, size);
  }
  return size;
}

void ChunkSizer::Widen(bool elements) {
  widen_ = std::min(2 * widen_, kMaxWiden);
  if (elements) widen_elements_ = widen_;
}

void ChunkSizer::Narrow() {
  widen_ = std::max<int64_t>(1, widen_ / 2);
  widen_elements_ = std::min(widen_elements_, widen_);
  next_ = std::min(next_, max_ * widen_elements_);
}

void ChunkSizer::Observe(const ChunkResult& chunk) {
  for (const std::optional<Value>& value : chunk.values) {
    if (value) {
      element_bytes_ = ValueBytes(*value);
      return;
    }
  }
}

}  // namespace spelt::internal
