#include "riegeli/simple_chunk.h"

#include <limits>
#include <string>
#include <utility>

#include "riegeli/varint.h"

namespace spelt::internal::riegeli {
namespace {

std::string Num(uint64_t n) { return std::to_string(n); }

// The record sizes as end offsets; they must add up to `decoded_data_size`.
void ParseRecordEnds(std::string_view sizes, uint64_t num_records, uint64_t decoded_data_size,
                     std::vector<uint64_t>& ends) {
  ends.clear();
  ends.reserve(num_records);
  uint64_t end = 0;
  for (uint64_t i = 0; i < num_records; ++i) {
    uint64_t size = 0;
    if (!ReadVarint64(sizes, size)) {
      throw FormatError("record sizes end after " + Num(i) + " of " + Num(num_records) +
                        " records");
    }
    if (size > decoded_data_size - end) {
      throw FormatError("record sizes add up to more than decoded_data_size " +
                        Num(decoded_data_size));
    }
    end += size;
    ends.push_back(end);
  }
  if (!sizes.empty()) throw FormatError("bytes left after the last record size");
  if (end != decoded_data_size) {
    throw FormatError("record sizes add up to " + Num(end) + ", not decoded_data_size " +
                      Num(decoded_data_size));
  }
}

// Decodes the simple chunk `data` with `header`; sizes and values are decompressed with
// `decompress(type, framed, max_size, which)` (which: 0 sizes, 1 values). Returns the values.
template <typename DecompressFn>
std::string_view DecodeWith(const ChunkHeader& header, std::string_view data,
                            uint64_t max_decoded_size, std::vector<uint64_t>& ends,
                            CompressionType& type_out, DecompressFn decompress) {
  const uint64_t num_records = header.num_records;
  const uint64_t decoded_data_size = header.decoded_data_size;
  if (decoded_data_size > max_decoded_size) {
    throw FormatError("decoded_data_size " + Num(decoded_data_size) + " exceeds the limit " +
                      Num(max_decoded_size));
  }
  if (data.empty()) throw FormatError("simple chunk has no data");
  const CompressionType type = ParseCompressionType(static_cast<uint8_t>(data[0]));
  type_out = type;
  data.remove_prefix(1);
  uint64_t sizes_length = 0;
  if (!ReadVarint64(data, sizes_length) || sizes_length > data.size()) {
    throw FormatError("bad length of the record sizes");
  }
  const uint64_t max_sizes_length =
      num_records > std::numeric_limits<uint64_t>::max() / kMaxVarint64Size
          ? std::numeric_limits<uint64_t>::max()
          : num_records * kMaxVarint64Size;
  const std::string_view sizes =
      decompress(type, data.substr(0, sizes_length), max_sizes_length, 0);
  ParseRecordEnds(sizes, num_records, decoded_data_size, ends);
  const std::string_view values =
      decompress(type, data.substr(sizes_length), decoded_data_size, 1);
  if (values.size() != decoded_data_size) {
    throw FormatError("records take " + Num(values.size()) + " bytes, not decoded_data_size " +
                      Num(decoded_data_size));
  }
  return values;
}

}  // namespace

std::string_view DecodeSimpleChunkRecords(const ChunkHeader& header, std::string_view data,
                                          uint64_t max_decoded_size, ScratchBuffer& sizes_scratch,
                                          ScratchBuffer& values_scratch,
                                          std::vector<uint64_t>& ends) {
  CompressionType type;
  return DecodeWith(header, data, max_decoded_size, ends, type,
                    [&](CompressionType t, std::string_view framed, uint64_t max_size, int which) {
                      return Decompress(t, framed, max_size,
                                        which == 0 ? sizes_scratch : values_scratch);
                    });
}

std::string_view DecodeSimpleChunkRecords(const ChunkHeader& header, std::string_view data,
                                          uint64_t max_decoded_size, ScratchBuffer& sizes_scratch,
                                          std::string& values_out, std::vector<uint64_t>& ends) {
  CompressionType type;
  return DecodeWith(header, data, max_decoded_size, ends, type,
                    [&](CompressionType t, std::string_view framed, uint64_t max_size, int which) {
                      if (which == 0) return Decompress(t, framed, max_size, sizes_scratch);
                      return Decompress(t, framed, max_size, values_out);
                    });
}

DecodedChunk DecodeSimpleChunk(Chunk chunk, uint64_t max_decoded_size) {
  thread_local ScratchBuffer sizes_scratch;
  Buffer values_storage;
  std::vector<uint64_t> ends;
  CompressionType type;
  const std::string_view values = DecodeWith(
      chunk.header, chunk.data, max_decoded_size, ends, type,
      [&](CompressionType t, std::string_view framed, uint64_t max_size,
          int which) -> std::string_view {
        if (which == 0) return Decompress(t, framed, max_size, sizes_scratch);
        return Decompress(t, framed, max_size, values_storage);
      });
  sizes_scratch.Trim(kMaxKeptScratch);
  // Uncompressed records stay in the chunk's own buffer.
  Buffer owner = type == CompressionType::kNone ? std::move(chunk.storage)
                                                : std::move(values_storage);
  return DecodedChunk(std::move(owner), values, std::move(ends));
}

void SimpleChunkEncoder::Add(std::string_view record) {
  AppendVarint64(record.size(), sizes_);
  values_.append(record);
  ++num_records_;
}

EncodedChunk SimpleChunkEncoder::Encode() {
  std::string compressed_sizes;
  AppendCompressed(options_, sizes_, compressed_sizes);
  std::string data;
  data.push_back(static_cast<char>(options_.type));
  AppendVarint64(compressed_sizes.size(), data);
  data.append(compressed_sizes);
  AppendCompressed(options_, values_, data);
  EncodedChunk chunk{ChunkHeader::For(ChunkType::kSimple, data, num_records_, values_.size()),
                     std::move(data)};
  num_records_ = 0;
  sizes_.clear();
  values_.clear();
  return chunk;
}

}  // namespace spelt::internal::riegeli
