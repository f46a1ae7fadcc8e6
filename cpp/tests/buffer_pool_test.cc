// Tests for the recycling of array buffers (base/buffer_pool.cc, used by
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
  using internal::AcquireBuffer;
  using internal::ReleaseBuffer;
  const size_t bytes = 4 * kHuge;
  void* a = AcquireBuffer(bytes, kHuge);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kHuge, 0u);
  ReleaseBuffer(a, bytes, kHuge);
  void* other = AcquireBuffer(bytes + kHuge, kHuge);  // another size: a new buffer
  EXPECT_NE(other, a);
  EXPECT_EQ(AcquireBuffer(bytes, kHuge), a);
  ReleaseBuffer(other, bytes + kHuge, kHuge);
  ReleaseBuffer(a, bytes, kHuge);
  // At most 4 are kept: of 6 of one size released, the first 4 come back, newest first.
  std::vector<void*> buffers;
  for (int i = 0; i < 6; ++i) buffers.push_back(AcquireBuffer(bytes, kHuge));
  for (void* b : buffers) ReleaseBuffer(b, bytes, kHuge);
  for (int i = 3; i >= 0; --i) EXPECT_EQ(AcquireBuffer(bytes, kHuge), buffers[i]) << i;
  // Kept buffers of another size make room for a new size, oldest first.
  for (int i = 0; i < 4; ++i) ReleaseBuffer(buffers[i], bytes, kHuge);
  void* larger = AcquireBuffer(bytes + kHuge, kHuge);
  ReleaseBuffer(larger, bytes + kHuge, kHuge);
  EXPECT_EQ(AcquireBuffer(bytes + kHuge, kHuge), larger);
  for (int i = 3; i >= 1; --i) EXPECT_EQ(AcquireBuffer(bytes, kHuge), buffers[i]) << i;
  for (int i = 1; i < 4; ++i) ReleaseBuffer(buffers[i], bytes, kHuge);
  ReleaseBuffer(larger, bytes + kHuge, kHuge);
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

TEST(BufferPoolTest, MidSizedBuffersAreKeptAHundredAndTwentyEightAtATime) {
  using internal::AcquireBuffer;
  using internal::ReleaseBuffer;
  const size_t bytes = internal::kRecycledBufferMinBytes + 64;  // a batch of small records
  std::vector<void*> buffers;
  for (int i = 0; i < 130; ++i) buffers.push_back(AcquireBuffer(bytes, 64));
  for (void* b : buffers) ReleaseBuffer(b, bytes, 64);
  // The first 128 released come back, newest first; the large size class is apart.
  for (int i = 127; i >= 0; --i) EXPECT_EQ(AcquireBuffer(bytes, 64), buffers[i]) << i;
  void* next = AcquireBuffer(bytes, 64);
  EXPECT_EQ(std::set<void*>(buffers.begin(), buffers.begin() + 128).count(next), 0u);
  ReleaseBuffer(next, bytes, 64);
  for (int i = 0; i < 128; ++i) ReleaseBuffer(buffers[i], bytes, 64);
  // A batch array of that size reuses them; one below kRecycledBufferMinBytes does not.
  const std::byte* first;
  {
    Array a = Array::AllocateUninitialized(DType::kUint8, {128, 785});
    first = a.data;
  }
  EXPECT_EQ(Array::AllocateUninitialized(DType::kUint8, {128, 785}).data, first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
}

}  // namespace
}  // namespace spelt
