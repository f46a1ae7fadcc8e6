// Internal: reading one chunk at a known file offset, with the block headers inside it removed
// and every header checked. Spec: arrayrecord-format.md §1.3, §1.4.
#ifndef SPELT_SRC_RIEGELI_CHUNK_READER_H_
#define SPELT_SRC_RIEGELI_CHUNK_READER_H_

#include <cstdint>
#include <string>

#include "spelt/file_system.h"
#include "riegeli/format.h"

namespace spelt::internal::riegeli {

struct ChunkChecks {
  bool header_hashes = true;  // block-header and chunk-header hashes
  bool data_hash = true;
};

// Parses the chunk that begins at file offset `begin` from `bytes`, the file's bytes from
// `begin` to the end of the chunk's region (the next chunk the caller knows of, or the end of
// a region; bytes between the chunk's end and the region's end, such as a padding chunk, are
// ignored). Checks the hashes selected by `checks`, that every block header inside the chunk
// points at the chunk's start and end, and that the chunk fits in its region. The result's
// num_records and data_size are at most bytes.size(), and its data points into `bytes`.
// Throws CorruptFileError naming `path` and the offset.
Chunk ParseChunk(const std::string& path, uint64_t begin, Buffer bytes, ChunkChecks checks);

// A parsed chunk whose data points into bytes owned by the caller.
struct ChunkView {
  ChunkHeader header;
  std::string_view data;
};

// ParseChunk() on the caller's `size` bytes at `bytes`, which it may rearrange (block headers
// are removed in place, within those bytes only). The result points into them.
ChunkView ParseChunkInPlace(const std::string& path, uint64_t begin, char* bytes, size_t size,
                            ChunkChecks checks);

// Reads the region [begin, end) of `file` and parses the chunk at its start (ParseChunk).
// REQUIRES: begin < end <= file.size().
Chunk ReadChunk(const spelt::RandomAccessFile& file, uint64_t begin, uint64_t end,
                ChunkChecks checks);

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_CHUNK_READER_H_
