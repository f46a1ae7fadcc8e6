// Internal: writing chunks to a new Riegeli file, inserting a block header at every 64 KiB
// boundary and padding each chunk to the length the format requires. Spec: §1.3, §1.4.
#ifndef SPELT_SRC_RIEGELI_CHUNK_WRITER_H_
#define SPELT_SRC_RIEGELI_CHUNK_WRITER_H_

#include <cstdint>
#include <string_view>

#include "io/append_file.h"
#include "riegeli/format.h"

namespace spelt::internal::riegeli {

class ChunkWriter {
 public:
  // Writes to `file` from its start, with the file signature chunk first. `file` must outlive
  // the writer.
  explicit ChunkWriter(io::AppendFile& file);

  // File offset where the next chunk begins.
  uint64_t pos() const { return pos_; }
  // Writes a chunk. REQUIRES: header == ChunkHeader::For(type, data, ...).
  void WriteChunk(const ChunkHeader& header, std::string_view data);
  // Writes a padding chunk ending at a block boundary, unless pos() is one already.
  void PadToBlockBoundary();

 private:
  // Writes `length` bytes of the chunk [chunk_begin, chunk_end), inserting block headers;
  // emit(n) appends the next n of those bytes to the file.
  template <typename Emit>
  void WriteSection(uint64_t length, uint64_t chunk_begin, uint64_t chunk_end, Emit emit);

  io::AppendFile& file_;
  uint64_t pos_ = 0;
};

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_CHUNK_WRITER_H_
