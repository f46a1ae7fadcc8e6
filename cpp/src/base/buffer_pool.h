// Internal: the one pool of large byte buffers, serving batch arrays
// (Array::AllocateUninitialized), riegeli's chunk and decompression buffers (riegeli/, the
// ArrayRecord reader and writer) and the decoded columns of spelt._parquet_native.
//
// A buffer freshly mapped costs the kernel a page fault and a zero fill per page on first
// touch, which for a stream of equal-sized batches or chunks is as much work as filling them:
// multi-megabyte buffers are mapped afresh by malloc, and ones of 64 KiB and more are returned
// to the kernel when freed on another thread than the one that made them (glibc trims
// per-thread arenas), as a read-ahead thread's batches are. Freed buffers of these sizes are
// kept (a few, bounded in bytes) and handed out again, already faulted in.
//
// Capacity classes: a buffer of `size` bytes (>= kRecycledBufferMinBytes) gets the capacity of
// its class: `size` rounded up to a quarter of the power of two at or below it (at most 25%
// more), then, from kHugePageBytes on, to a multiple of kHugePageBytes. A request is served by
// a kept buffer of its class, so that sizes that vary a little (compressed chunks, row groups)
// reuse each other's buffers, and equal sizes always do.
//
// The pool is a process-wide static of the module that holds this code: libspelt (the
// _core extension) has one and spelt._parquet_native, which compiles this file in rather
// than linking libspelt, has its own. Thread-safe.
#ifndef SPELT_SRC_BASE_BUFFER_POOL_H_
#define SPELT_SRC_BASE_BUFFER_POOL_H_

#include <cstddef>
#include <string_view>

namespace spelt::internal {

// Buffers of at least this many bytes are recycled: at most 128 of them and 48 MiB in all are
// kept below kLargeBufferMinBytes, at most 8 and 256 MiB from it on (capacities counted: a
// class rounds a size up by at most 25%). Smaller ones are malloc'd and freed.
inline constexpr size_t kRecycledBufferMinBytes = size_t{64} << 10;
inline constexpr size_t kLargeBufferMinBytes = size_t{4} << 20;
// Buffers of this capacity and more are aligned to it and asked to use transparent huge pages
// (advice: failure is harmless): faulting in a fresh multi-megabyte buffer 4 KiB at a time can
// cost more than filling it.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// The capacity a Buffer of `size` bytes gets (see above; below kRecycledBufferMinBytes, `size`
// rounded up to a multiple of 64, at least 64). Throws std::bad_alloc when it overflows.
size_t BufferCapacity(size_t size);

// A byte buffer, not zero-filled, aligned to 64 bytes (to kHugePageBytes from that capacity):
// from the pool when large enough, given back to it when destroyed or assigned over.
// Move-only; not thread-safe itself (the pool is).
class Buffer {
 public:
  Buffer() = default;  // empty: data() is null
  // `size` bytes (a capacity of BufferCapacity(size)): a kept buffer of that capacity if any,
  // else a new one. Throws std::bad_alloc.
  explicit Buffer(size_t size);
  Buffer(Buffer&& other) noexcept
      : data_(other.data_), size_(other.size_), capacity_(other.capacity_) {
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  Buffer& operator=(Buffer&& other) noexcept;
  ~Buffer() { Release(); }

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  // Gives the memory back: kept for reuse, making room by freeing kept buffers of other
  // capacities (oldest first), or freed when its class is full of buffers of its capacity or it
  // is larger than the class keeps.
  void Release() noexcept;

  char* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

// A reusable scratch area (meant to be thread-local): grows as needed and keeps its memory
// between uses, so that reading chunk after chunk does not even go to the pool. Not
// zero-filled; not thread-safe.
class ScratchBuffer {
 public:
  // At least `size` bytes, valid until the next Get() or Trim(). Contents are not kept.
  char* Get(size_t size) {
    if (size > buffer_.capacity()) buffer_ = Buffer(size);
    return buffer_.data();
  }
  // Gives the memory back to the pool if more than `max_kept` bytes are held.
  void Trim(size_t max_kept) {
    if (buffer_.capacity() > max_kept) buffer_ = Buffer();
  }
  size_t capacity() const { return buffer_.capacity(); }

 private:
  Buffer buffer_;
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_BASE_BUFFER_POOL_H_
