#include "base/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace spelt::internal {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

struct Kept {
  void* buffer;
  size_t bytes, align;
};

// The kept buffers of one size class.
struct SizeClass {
  SizeClass(size_t max_buffers, size_t max_bytes)
      : max_buffers(max_buffers), max_bytes(max_bytes) {}
  const size_t max_buffers, max_bytes;
  std::vector<Kept> kept;  // most recently released last
  size_t kept_bytes = 0;
};

struct Pool {
  std::mutex mu;
  SizeClass mid{128, size_t{32} << 20};
  SizeClass large{4, size_t{256} << 20};
  SizeClass& For(size_t bytes) { return bytes >= kLargeBufferMinBytes ? large : mid; }
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: arrays may be freed at exit
  return *pool;
}

}  // namespace

void* AcquireBuffer(size_t bytes, size_t align) {
  Pool& pool = ThePool();
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    SizeClass& sizes = pool.For(bytes);
    for (auto it = sizes.kept.rbegin(); it != sizes.kept.rend(); ++it) {
      if (it->bytes == bytes && it->align == align) {
        void* buffer = it->buffer;
        sizes.kept_bytes -= bytes;
        sizes.kept.erase(std::next(it).base());
        return buffer;
      }
    }
  }
  void* buffer = std::aligned_alloc(align, bytes);
  if (buffer == nullptr) throw std::bad_alloc();
  // A hint (as numpy gives): failure is harmless.
  if (align >= kHugePage) madvise(buffer, bytes, MADV_HUGEPAGE);
  return buffer;
}

void ReleaseBuffer(void* buffer, size_t bytes, size_t align) {
  Pool& pool = ThePool();
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    SizeClass& sizes = pool.For(bytes);
    // Room is made by freeing kept buffers of other sizes, oldest first (a stream that changed
    // its batch shape); buffers of this size stay, and this one is freed if there is no room
    // (many more in flight than are kept: those kept keep serving, malloc serves the rest).
    const auto full = [&] {
      return sizes.kept.size() >= sizes.max_buffers || sizes.kept_bytes + bytes > sizes.max_bytes;
    };
    for (auto it = sizes.kept.begin(); full() && it != sizes.kept.end();) {
      if (it->bytes == bytes && it->align == align) {
        ++it;
        continue;
      }
      std::free(it->buffer);
      sizes.kept_bytes -= it->bytes;
      it = sizes.kept.erase(it);
    }
    if (!full()) {
      sizes.kept.push_back({buffer, bytes, align});
      sizes.kept_bytes += bytes;
      return;
    }
  }
  std::free(buffer);
}

}  // namespace spelt::internal
