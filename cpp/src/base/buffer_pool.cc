#include "base/buffer_pool.h"

#include <sys/mman.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace spelt::internal {
namespace {

constexpr size_t kAlignment = 64;

size_t RoundUp(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// The kept buffers of one size class.
struct SizeClass {
  SizeClass(size_t max_buffers, size_t max_bytes)
      : max_buffers(max_buffers), max_bytes(max_bytes) {
    kept.reserve(max_buffers);  // Keep() then never allocates (it runs in destructors)
  }
  const size_t max_buffers, max_bytes;
  struct Kept {
    char* data;
    size_t capacity;
  };
  std::vector<Kept> kept;  // most recently released last
  size_t kept_bytes = 0;
};

struct Pool {
  std::mutex mu;
  SizeClass mid{128, size_t{48} << 20};
  SizeClass large{8, size_t{256} << 20};
  SizeClass& For(size_t capacity) { return capacity >= kLargeBufferMinBytes ? large : mid; }
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: buffers may be freed at exit
  return *pool;
}

// A kept buffer of `capacity` (>= kRecycledBufferMinBytes), or null.
char* TakeKept(size_t capacity) {
  Pool& pool = ThePool();
  std::lock_guard<std::mutex> lock(pool.mu);
  SizeClass& sizes = pool.For(capacity);
  for (auto it = sizes.kept.rbegin(); it != sizes.kept.rend(); ++it) {
    if (it->capacity == capacity) {
      char* data = it->data;
      sizes.kept_bytes -= capacity;
      sizes.kept.erase(std::next(it).base());
      return data;
    }
  }
  return nullptr;
}

// Keeps `data` (of `capacity` >= kRecycledBufferMinBytes) if there is room; false if not.
bool Keep(char* data, size_t capacity) {
  Pool& pool = ThePool();
  std::lock_guard<std::mutex> lock(pool.mu);
  SizeClass& sizes = pool.For(capacity);
  // Room is made by freeing kept buffers of other capacities, oldest first (a stream that
  // changed its batch shape); buffers of this capacity stay, and this one is freed if there is
  // no room (many more in flight than are kept: those kept keep serving, malloc serves the
  // rest).
  const auto full = [&] {
    return sizes.kept.size() >= sizes.max_buffers || sizes.kept_bytes + capacity > sizes.max_bytes;
  };
  for (auto it = sizes.kept.begin(); full() && it != sizes.kept.end();) {
    if (it->capacity == capacity) {
      ++it;
      continue;
    }
    std::free(it->data);
    sizes.kept_bytes -= it->capacity;
    it = sizes.kept.erase(it);
  }
  if (full()) return false;
  sizes.kept.push_back({data, capacity});
  sizes.kept_bytes += capacity;
  return true;
}

// glibc raises its mmap threshold (and its heap trim threshold, twice that) to the size of a
// freed mmapped block (up to 32 MiB), so that code that mallocs and frees blocks of a size stops
// mapping them afresh and trimming its heaps each time. Kept buffers are not freed: in their
// stead, one untouched block of each new largest capacity is (a map and an unmap, no page
// touched), so that the malloc of the records and Python objects around these buffers adapts
// as it did when riegeli's buffers were malloc'd and freed. Without it, reading ranges of
// ArrayRecord records faults ~1.5x the pages (docs/benchmarks.md, H4).
void RaiseMallocThresholds(size_t capacity) {
  static std::atomic<size_t> raised{0};
  size_t seen = raised.load(std::memory_order_relaxed);
  while (capacity > seen) {
    if (raised.compare_exchange_weak(seen, capacity, std::memory_order_relaxed)) {
      void* block = std::malloc(capacity);
      asm volatile("" : : "r"(block) : "memory");  // a pair the compiler may not remove
      std::free(block);
      return;
    }
  }
}

}  // namespace

size_t BufferCapacity(size_t size) {
  if (size > SIZE_MAX / 4) throw std::bad_alloc();
  if (size < kRecycledBufferMinBytes) return size == 0 ? kAlignment : RoundUp(size, kAlignment);
  const size_t capacity = RoundUp(size, std::bit_floor(size) / 4);
  return capacity < kHugePageBytes ? capacity : RoundUp(capacity, kHugePageBytes);
}

Buffer::Buffer(size_t size) : size_(size), capacity_(BufferCapacity(size)) {
  if (capacity_ >= kRecycledBufferMinBytes) data_ = TakeKept(capacity_);
  if (data_ != nullptr) return;
  if (capacity_ >= kRecycledBufferMinBytes) RaiseMallocThresholds(capacity_);
  const size_t align = capacity_ >= kHugePageBytes ? kHugePageBytes : kAlignment;
  data_ = static_cast<char*>(std::aligned_alloc(align, capacity_));
  if (data_ == nullptr) throw std::bad_alloc();
  if (align == kHugePageBytes) madvise(data_, capacity_, MADV_HUGEPAGE);  // advice only
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = other.data_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

void Buffer::Release() noexcept {
  if (data_ == nullptr) return;
  if (capacity_ < kRecycledBufferMinBytes || !Keep(data_, capacity_)) std::free(data_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

}  // namespace spelt::internal
