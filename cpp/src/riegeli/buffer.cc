#include "riegeli/buffer.h"

#include <sys/mman.h>

#include <new>

namespace spelt::internal::riegeli {
namespace {

constexpr size_t kHugePageSize = size_t{2} << 20;

char* Allocate(size_t size) {
  if (size < kHugePageSize) return static_cast<char*>(std::malloc(size == 0 ? 1 : size));
  const size_t rounded = (size + kHugePageSize - 1) / kHugePageSize * kHugePageSize;
  if (rounded < size) return nullptr;  // overflow
  void* p = std::aligned_alloc(kHugePageSize, rounded);
#ifdef MADV_HUGEPAGE
  if (p != nullptr) ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return static_cast<char*>(p);
}

}  // namespace

Buffer::Buffer(size_t size) : data_(Allocate(size)), size_(size) {
  if (data_ == nullptr) throw std::bad_alloc();
}

}  // namespace spelt::internal::riegeli
