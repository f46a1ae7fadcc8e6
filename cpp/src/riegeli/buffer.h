// Internal: a heap byte buffer that is not zero-filled, for bytes about to be overwritten (a
// pread target, a decompression output). Move-only.
#ifndef SPELT_SRC_RIEGELI_BUFFER_H_
#define SPELT_SRC_RIEGELI_BUFFER_H_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace spelt::internal::riegeli {

class Buffer {
 public:
  Buffer() = default;
  // Throws std::bad_alloc. Buffers of 2 MiB or more are backed by transparent huge pages where
  // the OS offers them: faulting in a fresh multi-megabyte buffer 4 KiB at a time can cost more
  // than filling it.
  explicit Buffer(size_t size);

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
};

// A reusable scratch area (meant to be thread-local): grows as needed and keeps its memory
// between uses, so that reading chunk after chunk does not allocate, free and fault in fresh
// pages each time. Not zero-filled.
class ScratchBuffer {
 public:
  // At least `size` bytes, valid until the next Get() or Release(). Contents are not kept.
  char* Get(size_t size) {
    if (size > buffer_.size()) buffer_ = Buffer(size + size / 4);
    return buffer_.data();
  }
  // Frees the memory if more than `max_kept` bytes are held.
  void Trim(size_t max_kept) {
    if (buffer_.size() > max_kept) buffer_ = Buffer();
  }
  size_t capacity() const { return buffer_.size(); }

 private:
  Buffer buffer_;
};

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_BUFFER_H_
