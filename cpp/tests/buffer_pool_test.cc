// Tests for the pool of large buffers (base/buffer_pool.cc), used by Array::AllocateUninitialized,
// riegeli's buffers and spelt._parquet_native. The pool is process-wide: each test uses
// capacities of its own.
#include "base/buffer_pool.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/value.h"

namespace spelt {
namespace {

using internal::Buffer;
using internal::BufferCapacity;
using internal::ScratchBuffer;

constexpr size_t kKiB = size_t{1} << 10, kMiB = size_t{1} << 20;
constexpr size_t kHuge = internal::kHugePageBytes;

// Gives `buffers` back to the pool in order.
void Release(std::vector<Buffer>& buffers) {
  for (Buffer& buffer : buffers) buffer = Buffer();
  buffers.clear();
}

TEST(BufferPoolTest, CapacityClassesWasteAtMostAQuarter) {
  EXPECT_EQ(BufferCapacity(0), 64u);
  EXPECT_EQ(BufferCapacity(100), 128u);
  EXPECT_EQ(BufferCapacity(64 * kKiB), 64 * kKiB);
  EXPECT_EQ(BufferCapacity(64 * kKiB + 1), 80 * kKiB);
  EXPECT_EQ(BufferCapacity(100000), 112 * kKiB);
  EXPECT_EQ(BufferCapacity(kMiB + 1), kMiB + 256 * kKiB);
  // From 2 MiB on, multiples of 2 MiB.
  EXPECT_EQ(BufferCapacity(3 * kMiB), 4 * kMiB);
  EXPECT_EQ(BufferCapacity(9 * kMiB), 10 * kMiB);
  EXPECT_EQ(BufferCapacity(32 * kMiB), 32 * kMiB);
  EXPECT_EQ(BufferCapacity(33 * kMiB), 40 * kMiB);
  for (size_t size = 64 * kKiB; size < 64 * kMiB; size = size * 9 / 8 + 1) {
    EXPECT_GE(BufferCapacity(size), size);
    EXPECT_LE(BufferCapacity(size), size < kHuge ? size + size / 4 : size + size / 4 + kHuge);
  }
  EXPECT_THROW(BufferCapacity(SIZE_MAX - 10), std::bad_alloc);
}

TEST(BufferPoolTest, ReleasedBuffersServeTheirCapacityClassOnly) {
  const size_t bytes = 8 * kMiB;
  char* a;
  {
    Buffer buffer(bytes);
    a = buffer.data();
    EXPECT_EQ(buffer.size(), bytes);
    EXPECT_EQ(buffer.capacity(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kHuge, 0u);
  }
  Buffer other(bytes + kHuge);  // another class: a new buffer
  EXPECT_NE(other.data(), a);
  {
    Buffer smaller(bytes - 100000);  // the same class: the kept one
    EXPECT_EQ(smaller.data(), a);
    EXPECT_EQ(smaller.size(), bytes - 100000);
    EXPECT_EQ(smaller.capacity(), bytes);
  }
  // A moved buffer is given back once, by its new owner.
  Buffer moved(bytes);
  EXPECT_EQ(moved.data(), a);
  Buffer taker = std::move(moved);
  EXPECT_EQ(moved.data(), nullptr);
  taker = Buffer();
  EXPECT_EQ(Buffer(bytes).data(), a);
}

TEST(BufferPoolTest, LargeBuffersAreKeptEightAtATimeAndOtherClassesMakeRoom) {
  const size_t bytes = 12 * kMiB;
  std::vector<Buffer> buffers;
  std::vector<char*> data;
  for (int i = 0; i < 10; ++i) {
    buffers.emplace_back(bytes);
    data.push_back(buffers.back().data());
  }
  Release(buffers);  // the first 8 are kept
  for (int i = 7; i >= 0; --i) {
    buffers.emplace_back(bytes);
    EXPECT_EQ(buffers.back().data(), data[i]) << i;
  }
  // Kept buffers of another class make room for a new class, oldest first.
  Release(buffers);  // data[7] first
  char* larger;
  {
    Buffer b(bytes + 4 * kMiB);
    larger = b.data();
  }
  EXPECT_EQ(Buffer(bytes + 4 * kMiB).data(), larger);
  for (int i = 0; i < 7; ++i) {  // data[7] made room
    buffers.emplace_back(bytes);
    EXPECT_EQ(buffers.back().data(), data[i]) << i;
  }
}

TEST(BufferPoolTest, MidSizedBuffersAreKeptAHundredAndTwentyEightAtATime) {
  const size_t bytes = internal::kRecycledBufferMinBytes + 64;  // a batch of small records
  std::vector<Buffer> buffers;
  std::vector<char*> data;
  for (int i = 0; i < 130; ++i) {
    buffers.emplace_back(bytes);
    data.push_back(buffers.back().data());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data.back()) % 64, 0u);
  }
  Release(buffers);
  // The first 128 released come back, newest first.
  for (int i = 127; i >= 0; --i) {
    buffers.emplace_back(bytes);
    EXPECT_EQ(buffers.back().data(), data[i]) << i;
  }
  Buffer next(bytes);
  EXPECT_EQ(std::set<char*>(data.begin(), data.begin() + 128).count(next.data()), 0u);
}

TEST(BufferPoolTest, SmallBuffersAreNotKept) {
  Buffer empty(0);
  EXPECT_NE(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
  Buffer small(1000);
  EXPECT_EQ(small.capacity(), 1024u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
}

TEST(BufferPoolTest, ScratchBufferGrowsAndGivesItsMemoryBackToThePool) {
  ScratchBuffer scratch;
  char* first = scratch.Get(3 * kMiB);
  EXPECT_EQ(scratch.capacity(), 4 * kMiB);
  EXPECT_EQ(scratch.Get(4 * kMiB), first);  // fits: kept
  char* grown = scratch.Get(6 * kMiB);
  EXPECT_EQ(scratch.capacity(), 6 * kMiB);
  EXPECT_EQ(Buffer(4 * kMiB).data(), first);  // the outgrown one went to the pool
  scratch.Trim(6 * kMiB);
  EXPECT_EQ(scratch.capacity(), 6 * kMiB);
  scratch.Trim(4 * kMiB);
  EXPECT_EQ(scratch.capacity(), 0u);
  EXPECT_EQ(Buffer(6 * kMiB).data(), grown);
}

TEST(BufferPoolTest, LargeArraysReuseFreedMemoryAndAllocateStillZeroes) {
  const std::vector<int64_t> shape = {4, 1 << 20};  // 16 MiB of float32
  const std::byte* first;
  {
    Array a = Array::AllocateUninitialized(DType::kFloat32, shape);
    first = a.data;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kHuge, 0u);
    std::memset(a.mutable_data(), 0xab, a.nbytes());
  }
  Array b = Array::Allocate(DType::kFloat32, shape);
  EXPECT_EQ(b.data, first);  // recycled
  std::vector<std::byte> zeros(b.nbytes());
  EXPECT_EQ(std::memcmp(b.data, zeros.data(), b.nbytes()), 0);
  // A batch array of a mid size reuses its buffer too.
  {
    Array a = Array::AllocateUninitialized(DType::kUint8, {128, 785});
    first = a.data;
  }
  EXPECT_EQ(Array::AllocateUninitialized(DType::kUint8, {128, 785}).data, first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  Array small = Array::Allocate(DType::kUint8, {1000});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data) % 64, 0u);
  Array empty = Array::Allocate(DType::kUint8, {0});
  EXPECT_NE(empty.data, nullptr);
}

}  // namespace
}  // namespace spelt
