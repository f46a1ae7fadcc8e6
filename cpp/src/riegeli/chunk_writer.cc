#include "riegeli/chunk_writer.h"

#include <algorithm>
#include <string>

namespace spelt::internal::riegeli {

ChunkWriter::ChunkWriter(io::AppendFile& file) : file_(file) {
  WriteChunk(ChunkHeader::For(ChunkType::kFileSignature, {}, 0, 0), {});
}

void ChunkWriter::WriteChunk(const ChunkHeader& header, std::string_view data) {
  const uint64_t chunk_begin = pos_;
  const uint64_t chunk_end = ChunkEnd(header, chunk_begin);
  const auto header_bytes = header.Encode();
  const std::string_view header_view(header_bytes.data(), header_bytes.size());
  for (std::string_view bytes : {header_view, data}) {
    WriteSection(bytes.size(), chunk_begin, chunk_end, [&](uint64_t n) {
      file_.Append(bytes.substr(0, n));
      bytes.remove_prefix(n);
    });
  }
  WriteSection(chunk_end - pos_, chunk_begin, chunk_end,
               [&](uint64_t n) { file_.AppendZeros(n); });
}

void ChunkWriter::PadToBlockBoundary() {
  uint64_t length = RemainingInBlock(pos_);
  if (length == 0) return;
  // A padding chunk needs room for its header; if this block has none left, pad to the end of
  // the next block instead.
  if (length < kChunkHeaderSize) length += kUsableBlockSize;
  const std::string zeros(length - kChunkHeaderSize, '\0');
  WriteChunk(ChunkHeader::For(ChunkType::kPadding, zeros, 0, 0), zeros);
}

template <typename Emit>
void ChunkWriter::WriteSection(uint64_t length, uint64_t chunk_begin, uint64_t chunk_end,
                               Emit emit) {
  while (length > 0) {
    if (IsBlockBoundary(pos_)) {
      const auto block_header = BlockHeader{pos_ - chunk_begin, chunk_end - pos_}.Encode();
      file_.Append(std::string_view(block_header.data(), block_header.size()));
      pos_ += kBlockHeaderSize;
    }
    const uint64_t n = std::min(length, RemainingInBlock(pos_));
    emit(n);
    pos_ += n;
    length -= n;
  }
}

}  // namespace spelt::internal::riegeli
