#include "buffer_pool.h"

#include <cstdlib>
#include <new>

namespace spelt::parquet_native {
namespace {

constexpr size_t kAlignment = 64;

}  // namespace

void BufferRelease::operator()(std::byte* data) const { pool->Release(data, capacity); }

BufferPool::~BufferPool() {
  for (auto& [capacity, data] : free_) std::free(data);
}

Buffer BufferPool::Acquire(size_t size) {
  {
    std::lock_guard lock(mu_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->first >= size && it->first / 2 < size) {
        auto [capacity, data] = *it;
        free_.erase(it);
        return Buffer(data, BufferRelease{this, capacity});
      }
    }
  }
  const size_t capacity = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* data = std::aligned_alloc(kAlignment, capacity == 0 ? kAlignment : capacity);
  if (data == nullptr) throw std::bad_alloc();
  return Buffer(static_cast<std::byte*>(data), BufferRelease{this, capacity});
}

void BufferPool::Release(std::byte* data, size_t capacity) {
  {
    std::lock_guard lock(mu_);
    if (free_.size() < max_free_) {
      free_.emplace_back(capacity, data);
      return;
    }
  }
  std::free(data);
}

BufferPool& BufferPool::Default() {
  static BufferPool* pool = new BufferPool(4);  // never destroyed: buffers may outlive statics
  return *pool;
}

}  // namespace spelt::parquet_native
