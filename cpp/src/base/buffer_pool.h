// Internal: recycling of array buffers (Array::AllocateUninitialized). A buffer freshly
// mapped costs the kernel a page fault and a zero fill per page on first touch, which for a
// stream of equal-sized batches is as much work as filling them: multi-megabyte buffers are
// mapped afresh by malloc, and ones of 64 KiB and more are returned to the kernel when freed on
// another thread than the one that made them (glibc trims per-thread arenas), as a read-ahead
// thread's batches are. Freed buffers of these sizes are kept (a few, bounded in bytes) and
// handed out again for the same size and alignment, already faulted in. Thread-safe.
#ifndef SPELT_SRC_BASE_BUFFER_POOL_H_
#define SPELT_SRC_BASE_BUFFER_POOL_H_

#include <cstddef>

namespace spelt::internal {

// Buffers of at least this many bytes are recycled: at most 128 of them and 32 MiB in all are
// kept below kLargeBufferMinBytes, at most 4 and 256 MiB from it on.
inline constexpr size_t kRecycledBufferMinBytes = size_t{64} << 10;
inline constexpr size_t kLargeBufferMinBytes = size_t{4} << 20;

// A buffer of `bytes` (a multiple of `align`, >= kRecycledBufferMinBytes), aligned to `align`:
// a kept one of that size and alignment if any, else a new one (asked to use transparent huge
// pages where `align` is 2 MiB or more). Throws std::bad_alloc.
void* AcquireBuffer(size_t bytes, size_t align);
// Gives back a buffer from AcquireBuffer(bytes, align): kept for reuse, making room by freeing
// kept buffers of other sizes (oldest first), or freed when its size class is full of buffers
// of its size or it is larger than the class keeps.
void ReleaseBuffer(void* buffer, size_t bytes, size_t align);

}  // namespace spelt::internal

#endif  // SPELT_SRC_BASE_BUFFER_POOL_H_
