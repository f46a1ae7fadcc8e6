// Internal: recycling of large array buffers (Array::AllocateUninitialized). A buffer of many
// megabytes, freshly mapped, costs the kernel a page fault and a zero fill per page on first
// touch, which for a stream of equal-sized batches is as much work as filling them. Freed large
// buffers are kept (a few, bounded in bytes) and handed out again for the same size, already
// faulted in. Thread-safe.
#ifndef SPELT_SRC_BASE_BUFFER_POOL_H_
#define SPELT_SRC_BASE_BUFFER_POOL_H_

#include <cstddef>

namespace spelt::internal {

// Buffers of at least this many bytes are recycled.
inline constexpr size_t kRecycledBufferMinBytes = size_t{4} << 20;

// A buffer of `bytes` (a multiple of `align`, >= kRecycledBufferMinBytes), aligned to `align`:
// a kept one of that size and alignment if any, else a new one. Throws std::bad_alloc.
void* AcquireLargeBuffer(size_t bytes, size_t align);
// Gives back a buffer from AcquireLargeBuffer(bytes, align): kept for reuse, or freed when the
// pool is full (at most 4 buffers and 256 MiB kept).
void ReleaseLargeBuffer(void* buffer, size_t bytes, size_t align);

}  // namespace spelt::internal

#endif  // SPELT_SRC_BASE_BUFFER_POOL_H_
