#include "base/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace spelt::internal {
namespace {

constexpr size_t kMaxKeptBuffers = 4;
constexpr size_t kMaxKeptBytes = size_t{256} << 20;

struct Kept {
  void* buffer;
  size_t bytes, align;
};

struct Pool {
  std::mutex mu;
  std::vector<Kept> kept;  // most recently released last
  size_t kept_bytes = 0;
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: arrays may be freed at exit
  return *pool;
}

}  // namespace

void* AcquireLargeBuffer(size_t bytes, size_t align) {
  Pool& pool = ThePool();
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    for (auto it = pool.kept.rbegin(); it != pool.kept.rend(); ++it) {
      if (it->bytes == bytes && it->align == align) {
        void* buffer = it->buffer;
        pool.kept_bytes -= bytes;
        pool.kept.erase(std::next(it).base());
        return buffer;
      }
    }
  }
  void* buffer = std::aligned_alloc(align, bytes);
  if (buffer == nullptr) throw std::bad_alloc();
  madvise(buffer, bytes, MADV_HUGEPAGE);  // a hint (as numpy gives): failure is harmless
  return buffer;
}

void ReleaseLargeBuffer(void* buffer, size_t bytes, size_t align) {
  Pool& pool = ThePool();
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    if (bytes <= kMaxKeptBytes) {
      // Make room: the oldest kept buffers go first.
      while (!pool.kept.empty() &&
             (pool.kept.size() >= kMaxKeptBuffers || pool.kept_bytes + bytes > kMaxKeptBytes)) {
        std::free(pool.kept.front().buffer);
        pool.kept_bytes -= pool.kept.front().bytes;
        pool.kept.erase(pool.kept.begin());
      }
      pool.kept.push_back({buffer, bytes, align});
      pool.kept_bytes += bytes;
      return;
    }
  }
  std::free(buffer);
}

}  // namespace spelt::internal
