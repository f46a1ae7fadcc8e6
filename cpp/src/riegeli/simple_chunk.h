// Internal: simple chunks (type 'r'). Data layout: a compression byte; the varint length of the
// compressed record sizes; the compressed record sizes (one varint per record); then the
// compressed concatenation of the records, to the end of the data. Spec: §1.6.
#ifndef SPELT_SRC_RIEGELI_SIMPLE_CHUNK_H_
#define SPELT_SRC_RIEGELI_SIMPLE_CHUNK_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer_pool.h"
#include "riegeli/compression.h"
#include "riegeli/format.h"

namespace spelt::internal::riegeli {

// The records of one decoded chunk. Immutable; record views live as long as the object.
class DecodedChunk {
 public:
  DecodedChunk(Buffer storage, std::string_view values, std::vector<uint64_t> ends)
      : storage_(std::move(storage)), values_(values), ends_(std::move(ends)) {}

  uint64_t num_records() const { return ends_.size(); }
  // All records, concatenated; ends()[i] is where record i ends in it.
  std::string_view values() const { return values_; }
  const std::vector<uint64_t>& ends() const { return ends_; }
  // REQUIRES: i < num_records().
  std::string_view record(uint64_t i) const {
    const uint64_t begin = i == 0 ? 0 : ends_[i - 1];
    return values_.substr(begin, ends_[i] - begin);
  }

 private:
  Buffer storage_;            // owns the bytes of values_
  std::string_view values_;   // all records, concatenated
  std::vector<uint64_t> ends_;  // end of each record in values_
};

// Decodes a simple chunk as read by ReadChunk (so num_records is at most the chunk's span in
// bytes). Allocates at most `max_decoded_size` bytes for the records. Throws FormatError if the
// chunk is inconsistent.
DecodedChunk DecodeSimpleChunk(Chunk chunk, uint64_t max_decoded_size);

// Scratch buffers kept per thread are freed when they grow past this.
inline constexpr size_t kMaxKeptScratch = size_t{64} << 20;

// As DecodeSimpleChunk, without keeping the records: fills `ends` (end of each record) and
// returns the concatenated records, which point into `data` (uncompressed) or into
// `values_scratch`. Record sizes are decompressed into `sizes_scratch`.
std::string_view DecodeSimpleChunkRecords(const ChunkHeader& header, std::string_view data,
                                          uint64_t max_decoded_size, ScratchBuffer& sizes_scratch,
                                          ScratchBuffer& values_scratch,
                                          std::vector<uint64_t>& ends);
// As above, with compressed records decompressed straight into `values_out` (a chunk of one
// record read for one caller decodes into the caller's string).
std::string_view DecodeSimpleChunkRecords(const ChunkHeader& header, std::string_view data,
                                          uint64_t max_decoded_size, ScratchBuffer& sizes_scratch,
                                          std::string& values_out, std::vector<uint64_t>& ends);

// A chunk ready to be written.
struct EncodedChunk {
  ChunkHeader header;
  std::string data;
};

// Collects records and encodes them into one simple chunk.
class SimpleChunkEncoder {
 public:
  explicit SimpleChunkEncoder(CompressionOptions options) : options_(options) {}

  void Add(std::string_view record);
  uint64_t num_records() const { return num_records_; }
  // The chunk of the records added since the last Encode(); starts a new chunk.
  EncodedChunk Encode();

 private:
  CompressionOptions options_;
  uint64_t num_records_ = 0;
  std::string sizes_;   // varint per record
  std::string values_;  // concatenated records
};

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_SIMPLE_CHUNK_H_
