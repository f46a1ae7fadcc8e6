#include "riegeli/format.h"

#include <algorithm>
#include <string>

#include "riegeli/hash.h"

namespace spelt::internal::riegeli {
namespace {

void StoreLE64(uint64_t value, char* dst) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>(value >> (8 * i));
}

uint64_t LoadLE64(const char* src) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t{static_cast<uint8_t>(src[i])} << (8 * i);
  return value;
}

// Fills bytes 0..7 of a header with the hash of the rest.
template <size_t N>
void StoreHeaderHash(std::array<char, N>& bytes) {
  StoreLE64(Hash(std::string_view(bytes.data() + 8, N - 8)), bytes.data());
}

void CheckHeaderHash(std::string_view bytes, const char* what) {
  if (LoadLE64(bytes.data()) != Hash(bytes.substr(8))) {
    throw FormatError(std::string(what) + " hash mismatch");
  }
}

// The position after `length` logical bytes written from `pos`, counting block headers.
uint64_t AddWithOverhead(uint64_t pos, uint64_t length) {
  const uint64_t num_block_headers =
      (length + (pos + kUsableBlockSize - 1) % kBlockSize) / kUsableBlockSize;
  return pos + length + num_block_headers * kBlockHeaderSize;
}

uint64_t RoundUpToPossibleChunkBoundary(uint64_t pos) {
  const uint64_t remaining = RemainingInBlock(pos);
  return remaining < kUsableBlockSize ? pos : pos + remaining - (kUsableBlockSize - 1);
}

}  // namespace

std::array<char, kBlockHeaderSize> BlockHeader::Encode() const {
  std::array<char, kBlockHeaderSize> bytes;
  StoreLE64(previous_chunk, bytes.data() + 8);
  StoreLE64(next_chunk, bytes.data() + 16);
  StoreHeaderHash(bytes);
  return bytes;
}

BlockHeader BlockHeader::Decode(std::string_view bytes, bool verify_hash) {
  if (verify_hash) CheckHeaderHash(bytes, "block header");
  return BlockHeader{LoadLE64(bytes.data() + 8), LoadLE64(bytes.data() + 16)};
}

ChunkHeader ChunkHeader::For(ChunkType type, std::string_view data, uint64_t num_records,
                             uint64_t decoded_data_size) {
  return ChunkHeader{data.size(), Hash(data), type, num_records, decoded_data_size};
}

std::array<char, kChunkHeaderSize> ChunkHeader::Encode() const {
  std::array<char, kChunkHeaderSize> bytes;
  StoreLE64(data_size, bytes.data() + 8);
  StoreLE64(data_hash, bytes.data() + 16);
  StoreLE64(static_cast<uint8_t>(chunk_type) | (num_records << 8), bytes.data() + 24);
  StoreLE64(decoded_data_size, bytes.data() + 32);
  StoreHeaderHash(bytes);
  return bytes;
}

ChunkHeader ChunkHeader::Decode(std::string_view bytes, bool verify_hash) {
  if (verify_hash) CheckHeaderHash(bytes, "chunk header");
  const uint64_t type_and_records = LoadLE64(bytes.data() + 24);
  return ChunkHeader{LoadLE64(bytes.data() + 8), LoadLE64(bytes.data() + 16),
                     static_cast<ChunkType>(type_and_records & 0xff), type_and_records >> 8,
                     LoadLE64(bytes.data() + 32)};
}

uint64_t ChunkEnd(const ChunkHeader& header, uint64_t begin) {
  return std::max(AddWithOverhead(begin, kChunkHeaderSize + header.data_size),
                  RoundUpToPossibleChunkBoundary(begin + header.num_records));
}

}  // namespace spelt::internal::riegeli
