// Recycled memory for decoded Parquet columns.
//
// A decoded row group's column (32 MiB for 65,536 rows of 128 floats) is larger than glibc's
// mmap threshold, so each fresh one would be new pages that the kernel zeroes before the
// decoder overwrites them: 0.15 s of CPU per million such rows, a third of the whole decode.
// BufferPool keeps a few released buffers and hands them out again. Thread-safe.
#ifndef SPELT_CPP_PARQUET_NATIVE_BUFFER_POOL_H_
#define SPELT_CPP_PARQUET_NATIVE_BUFFER_POOL_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace spelt::parquet_native {

class BufferPool;

// Returns a buffer to its pool (or frees it when the pool is full).
struct BufferRelease {
  BufferPool* pool;
  size_t capacity;
  void operator()(std::byte* data) const;
};

using Buffer = std::unique_ptr<std::byte[], BufferRelease>;

class BufferPool {
 public:
  // Keeps at most `max_free` released buffers.
  explicit BufferPool(size_t max_free) : max_free_(max_free) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `size` bytes (64-byte aligned, contents unspecified): a released one
  // of capacity in [size, 2 * size) if there is one, else a new one. Throws std::bad_alloc.
  Buffer Acquire(size_t size);

  // The process-wide pool of the module (4 buffers).
  static BufferPool& Default();

 private:
  friend struct BufferRelease;
  void Release(std::byte* data, size_t capacity);

  const size_t max_free_;
  std::mutex mu_;
  std::vector<std::pair<size_t, std::byte*>> free_;  // (capacity, data), guarded by mu_
};

}  // namespace spelt::parquet_native

#endif  // SPELT_CPP_PARQUET_NATIVE_BUFFER_POOL_H_
