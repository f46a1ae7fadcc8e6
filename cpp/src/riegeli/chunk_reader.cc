#include "riegeli/chunk_reader.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "riegeli/hash.h"
#include "spelt/errors.h"

namespace spelt::internal::riegeli {
namespace {

// Walks the physical bytes of a chunk held in a buffer that starts at file offset `begin`,
// moving logical bytes (block headers removed) to the front of the logical region in place.
// The logical region starts where the first logical byte is, so a chunk that crosses no block
// boundary inside it is not moved at all.
class LogicalBytes {
 public:
  LogicalBytes(const std::string& path, uint64_t begin, char* data, size_t size,
               bool verify_hashes)
      : path_(path), begin_(begin), data_(data), size_(size), verify_hashes_(verify_hashes),
        position_(begin) {}

  // Gathers the next `n` logical bytes. Returns where they start.
  const char* Gather(uint64_t n) {
    char* const start = logical_end_;
    while (n > 0) {
      if (IsBlockBoundary(position_)) ReadBlockHeader();
      const uint64_t length = std::min({n, RemainingInBlock(position_), end() - position_});
      if (length == 0) Fail(position_, "chunk runs past the end of its region");
      char* const src = data_ + (position_ - begin_);
      if (logical_begin_ == nullptr) logical_begin_ = logical_end_ = src;
      if (logical_end_ != src) std::memmove(logical_end_, src, length);
      logical_end_ += length;
      position_ += length;
      n -= length;
    }
    return start == nullptr ? logical_begin_ : start;
  }

  // Called once the chunk's end is known: checks the block headers met so far, and from now on
  // checks each as it is met.
  void SetChunkEnd(uint64_t chunk_end) {
    chunk_end_ = chunk_end;
    for (const auto& [block, header] : pending_) CheckNextChunk(block, header);
    pending_.clear();
  }

  [[noreturn]] void Fail(uint64_t offset, const std::string& detail) const {
    throw CorruptFileError(path_, offset, detail);
  }

 private:
  uint64_t end() const { return begin_ + size_; }

  void ReadBlockHeader() {
    const uint64_t block = position_;
    if (end() - block < kBlockHeaderSize) Fail(block, "block header runs past the end of region");
    BlockHeader header;
    try {
      header = BlockHeader::Decode(
          std::string_view(data_ + (block - begin_), kBlockHeaderSize), verify_hashes_);
    } catch (const FormatError& e) {
      Fail(block, e.what());
    }
    if (header.previous_chunk != block - begin_) {
      Fail(block, "block header says the chunk begins " + std::to_string(header.previous_chunk) +
                      " bytes earlier, not " + std::to_string(block - begin_));
    }
    if (chunk_end_ == 0) {
      pending_.emplace_back(block, header);
    } else {
      CheckNextChunk(block, header);
    }
    position_ += kBlockHeaderSize;
  }

  void CheckNextChunk(uint64_t block, const BlockHeader& header) const {
    if (header.next_chunk != chunk_end_ - block) {
      Fail(block, "block header says the chunk ends " + std::to_string(header.next_chunk) +
                      " bytes later, not " + std::to_string(chunk_end_ - block));
    }
  }

  const std::string& path_;
  const uint64_t begin_;
  char* const data_;
  const size_t size_;
  const bool verify_hashes_;
  uint64_t position_;           // file offset of the next physical byte
  uint64_t chunk_end_ = 0;      // 0 until known
  char* logical_begin_ = nullptr;
  char* logical_end_ = nullptr;
  std::vector<std::pair<uint64_t, BlockHeader>> pending_;  // met before chunk_end_ was known
};

}  // namespace

ChunkView ParseChunkInPlace(const std::string& path, uint64_t begin, char* bytes, size_t size,
                            ChunkChecks checks) {
  if (!IsPossibleChunkBoundary(begin)) {
    throw CorruptFileError(path, begin, "offset is inside a block header, not a chunk start");
  }
  ChunkView chunk;
  LogicalBytes logical(path, begin, bytes, size, checks.header_hashes);

  const char* header_bytes = logical.Gather(kChunkHeaderSize);
  try {
    chunk.header = ChunkHeader::Decode(std::string_view(header_bytes, kChunkHeaderSize),
                                       checks.header_hashes);
  } catch (const FormatError& e) {
    logical.Fail(begin, e.what());
  }
  const uint64_t span = size;
  if (chunk.header.data_size > span || chunk.header.num_records > span) {
    logical.Fail(begin, "chunk header states " + std::to_string(chunk.header.data_size) +
                            " data bytes and " + std::to_string(chunk.header.num_records) +
                            " records, more than its region of " + std::to_string(span) +
                            " bytes");
  }
  const uint64_t chunk_end = ChunkEnd(chunk.header, begin);
  if (chunk_end > begin + span) {
    logical.Fail(begin, "chunk ends at " + std::to_string(chunk_end) +
                            ", past the end of its region at " + std::to_string(begin + span));
  }
  logical.SetChunkEnd(chunk_end);
  chunk.data = std::string_view(logical.Gather(chunk.header.data_size), chunk.header.data_size);
  if (checks.data_hash && Hash(chunk.data) != chunk.header.data_hash) {
    logical.Fail(begin, "chunk data hash mismatch");
  }
  return chunk;
}

Chunk ParseChunk(const std::string& path, uint64_t begin, Buffer bytes, ChunkChecks checks) {
  Chunk chunk;
  chunk.storage = std::move(bytes);
  const ChunkView view =
      ParseChunkInPlace(path, begin, chunk.storage.data(), chunk.storage.size(), checks);
  chunk.header = view.header;
  chunk.data = view.data;
  return chunk;
}

Chunk ReadChunk(const spelt::RandomAccessFile& file, uint64_t begin, uint64_t end,
                ChunkChecks checks) {
  Buffer bytes(end - begin);
  file.ReadAt(begin, bytes.data(), bytes.size());
  return ParseChunk(file.path(), begin, std::move(bytes), checks);
}

}  // namespace spelt::internal::riegeli
