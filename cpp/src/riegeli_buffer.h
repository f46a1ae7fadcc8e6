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

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_BUFFER_H_
