#include "array_record/chunk_cache.h"

#include <algorithm>
#include <utility>

namespace spelt::internal::array_record {

ChunkCache::ChunkPtr ChunkCache::Find(uint64_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const auto& entry) { return entry.first == index; });
  if (it == entries_.end()) return nullptr;
  std::rotate(entries_.begin(), it, it + 1);
  return entries_.front().second;
}

void ChunkCache::Insert(uint64_t index, ChunkPtr chunk) {
  if (capacity_ == 0) return;
  ChunkPtr evicted;  // released after the lock: freeing a chunk can take a while
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& entry) { return entry.first == index; });
  if (it == entries_.end()) {
    if (entries_.size() == capacity_) {
      evicted = std::move(entries_.back().second);
      entries_.pop_back();
    }
    entries_.emplace_back(index, nullptr);
    it = entries_.end() - 1;
  }
  std::rotate(entries_.begin(), it, it + 1);
  if (evicted == nullptr) evicted = std::move(entries_.front().second);
  entries_.front().second = std::move(chunk);
}

}  // namespace spelt::internal::array_record
