// IndexRecords (index.h).
#include "tfrecord/index.h"

#include <algorithm>
#include <memory>

#include "tfrecord/format.h"

namespace spelt::internal::tfrecord {
namespace {

constexpr uint64_t kBlockSize = uint64_t{256} << 10;
// A header beyond the current block is read alone (12 bytes) when the record before it is at
// least this large; otherwise a new block is read from there.
constexpr uint64_t kReadHeaderAlone = uint64_t{64} << 10;
constexpr uint64_t kProgressEvery = uint64_t{16} << 20;

}  // namespace

std::vector<uint64_t> IndexRecords(const spelt::RandomAccessFile& file, SequentialReads& reads,
                                   const std::function<void(uint64_t)>& progress) {
  const uint64_t size = file.size();
  std::vector<uint64_t> offsets;
  std::unique_ptr<char[]> block(new char[kBlockSize]);
  uint64_t block_start = 0, block_end = 0;  // file bytes in `block`
  uint64_t offset = 0, last_progress = 0, last_length = 0;
  while (offset < size) {
    const size_t have = std::min<uint64_t>(kHeaderSize, size - offset);
    if (have == kHeaderSize && (offset < block_start || offset + kHeaderSize > block_end)) {
      const uint64_t n = last_length >= kReadHeaderAlone ? kHeaderSize
                                                         : std::min(kBlockSize, size - offset);
      reads.Read(offset, block.get(), n);
      block_start = offset;
      block_end = offset + n;
    }
    const uint64_t length = CheckedLength(file.path(), offset, block.get() + (offset - block_start),
                                          have, size - offset - have);
    offsets.push_back(offset);
    offset += kHeaderSize + length + kFooterSize;
    last_length = length;
    if (progress && offset - last_progress >= kProgressEvery) {
      progress(offset);
      last_progress = offset;
    }
  }
  offsets.push_back(size);
  if (progress) progress(size);
  return offsets;
}

}  // namespace spelt::internal::tfrecord
