// Tests for the recycling of large array buffers (base/buffer_pool.cc, used by
// Array::AllocateUninitialized).
#include "base/buffer_pool.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/value.h"

namespace spelt {
namespace {

constexpr size_t kHuge = size_t{2} << 20;

TEST(BufferPoolTest, ReleasedBuffersAreReusedForTheSameSizeOnly) {
  using internal::AcquireLargeBuffer;
  using internal::ReleaseLargeBuffer;
  const size_t bytes = 4 * kHuge;
  void* a = AcquireLargeBuffer(bytes, kHuge);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kHuge, 0u);
  ReleaseLargeBuffer(a, bytes, kHuge);
  void* other = AcquireLargeBuffer(bytes + kHuge, kHuge);  // another size: a new buffer
  EXPECT_NE(other, a);
  EXPECT_EQ(AcquireLargeBuffer(bytes, kHuge), a);
  ReleaseLargeBuffer(other, bytes + kHuge, kHuge);
  ReleaseLargeBuffer(a, bytes, kHuge);
  // At most 4 are kept: of 6 released, the 4 released last come back, newest first.
  std::vector<void*> buffers;
  for (int i = 0; i < 6; ++i) buffers.push_back(AcquireLargeBuffer(bytes, kHuge));
  for (void* b : buffers) ReleaseLargeBuffer(b, bytes, kHuge);
  for (int i = 5; i >= 2; --i) EXPECT_EQ(AcquireLargeBuffer(bytes, kHuge), buffers[i]) << i;
  for (int i = 2; i < 6; ++i) ReleaseLargeBuffer(buffers[i], bytes, kHuge);
}

TEST(BufferPoolTest, LargeArraysReuseFreedMemoryAndAllocateStillZeroes) {
  const std::vector<int64_t> shape = {4, 1 << 20};  // 16 MiB of float32
  const std::byte* first;
  {
    Array a = Array::AllocateUninitialized(DType::kFloat32, shape);
    first = a.data;
    std::memset(a.mutable_data(), 0xab, a.nbytes());
  }
  Array b = Array::Allocate(DType::kFloat32, shape);
  EXPECT_EQ(b.data, first);  // recycled
  std::vector<std::byte> zeros(b.nbytes());
  EXPECT_EQ(std::memcmp(b.data, zeros.data(), b.nbytes()), 0);
  // Small arrays are not recycled through the pool (malloc serves them).
  Array small = Array::Allocate(DType::kUint8, {1000});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data) % 64, 0u);
}

}  // namespace
}  // namespace spelt
