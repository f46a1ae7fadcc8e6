// Internal: Riegeli records framing. A file is a sequence of 64 KiB blocks, each starting with a
// 24-byte block header; chunks (a 40-byte chunk header, data, padding) run across blocks, and
// a chunk's "logical" bytes are its bytes with the block headers removed. This file holds the
// constants, the position arithmetic and the two header types. Spec: arrayrecord-format.md §1.
#ifndef SPELT_SRC_RIEGELI_FORMAT_H_
#define SPELT_SRC_RIEGELI_FORMAT_H_

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "base/buffer_pool.h"

namespace spelt::internal::riegeli {

inline constexpr uint64_t kBlockSize = uint64_t{1} << 16;
inline constexpr uint64_t kBlockHeaderSize = 24;
inline constexpr uint64_t kUsableBlockSize = kBlockSize - kBlockHeaderSize;
inline constexpr uint64_t kChunkHeaderSize = 40;

// The chunk_type byte of a chunk header.
enum class ChunkType : uint8_t {
  kFileSignature = 's',
  kFileMetadata = 'm',
  kPadding = 'p',
  kSimple = 'r',
  kTransposed = 't',
};

// A structural problem found in bytes whose place in the file the thrower does not know; the
// caller that knows it rethrows a CorruptFileError naming the file and offset.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bytes from `pos` to the next block boundary (0 at a boundary).
constexpr uint64_t RemainingInBlock(uint64_t pos) {
  return (kBlockSize - pos % kBlockSize) % kBlockSize;
}
constexpr bool IsBlockBoundary(uint64_t pos) { return pos % kBlockSize == 0; }
// Chunks begin and end only outside block headers (a block boundary itself counts as outside).
constexpr bool IsPossibleChunkBoundary(uint64_t pos) {
  return RemainingInBlock(pos) < kUsableBlockSize;
}

// File offset of logical byte `offset` of a chunk that begins at file offset `begin`: block
// headers are skipped, so the result is never inside a block header or at a block boundary.
// REQUIRES: IsPossibleChunkBoundary(begin).
constexpr uint64_t PhysicalPosition(uint64_t begin, uint64_t offset) {
  if (IsBlockBoundary(begin)) begin += kBlockHeaderSize;
  const uint64_t in_first_block = RemainingInBlock(begin);
  if (offset < in_first_block) return begin + offset;
  offset -= in_first_block;
  return begin + in_first_block + (offset / kUsableBlockSize) * kBlockSize + kBlockHeaderSize +
         offset % kUsableBlockSize;
}

struct BlockHeader {
  uint64_t previous_chunk = 0;  // block start - start of the chunk this header interrupts
  uint64_t next_chunk = 0;      // end of that chunk - block start

  std::array<char, kBlockHeaderSize> Encode() const;
  // Throws FormatError if `verify_hash` and the stored hash does not match.
  static BlockHeader Decode(std::string_view bytes /* kBlockHeaderSize */, bool verify_hash);
};

struct ChunkHeader {
  uint64_t data_size = 0;  // logical bytes of data
  uint64_t data_hash = 0;
  ChunkType chunk_type = ChunkType::kPadding;
  uint64_t num_records = 0;  // 56 bits
  uint64_t decoded_data_size = 0;

  // The header of a chunk holding `data` (computes the data hash).
  static ChunkHeader For(ChunkType type, std::string_view data, uint64_t num_records,
                         uint64_t decoded_data_size);
  std::array<char, kChunkHeaderSize> Encode() const;
  // Throws FormatError if `verify_hash` and the stored hash does not match.
  static ChunkHeader Decode(std::string_view bytes /* kChunkHeaderSize */, bool verify_hash);
};

// File offset where a chunk beginning at `begin` ends (header, data, padding and the block
// headers inside it). REQUIRES: begin + 2 * (40 + data_size + num_records) does not overflow.
uint64_t ChunkEnd(const ChunkHeader& header, uint64_t begin);

// A chunk read from a file: its header and its logical data bytes, which point into `storage`.
struct Chunk {
  ChunkHeader header;
  std::string_view data;
  Buffer storage;
};

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_FORMAT_H_
