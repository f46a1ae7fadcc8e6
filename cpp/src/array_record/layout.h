// Internal: the messages of array_record's cpp/layout.proto, written and parsed by hand in
// protobuf wire format (no protobuf dependency). Spec: arrayrecord-format.md §2.2.
#ifndef SPELT_SRC_ARRAY_RECORD_LAYOUT_H_
#define SPELT_SRC_ARRAY_RECORD_LAYOUT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace spelt::internal::array_record {

// RiegeliPostscript.magic: the first 16 hex digits of md5("ArrayRecord\n").
inline constexpr uint64_t kMagic = 0x71930e704fdae05e;
// RiegeliFooterMetadata.ArrayRecordMetadata.version of the only layout there is.
inline constexpr uint64_t kVersion = 1;

// RiegeliPostscript: each of the 3 records of the last chunk.
struct Postscript {
  uint64_t footer_offset = 0;
  uint64_t magic = 0;
};

// RiegeliFooterMetadata.array_record_metadata: record 0 of the footer chunk.
struct FooterMetadata {
  uint64_t version = 0;
  uint64_t num_chunks = 0;
  uint64_t num_records = 0;
  std::string writer_options;
};

// ArrayRecordFooter: records 1..num_chunks of the footer chunk, one per data chunk.
struct FooterEntry {
  uint64_t chunk_offset = 0;
  uint64_t decoded_data_size = 0;
  uint64_t num_records = 0;
};

std::string Serialize(const Postscript& postscript);
std::string Serialize(const FooterMetadata& metadata);
std::string Serialize(const FooterEntry& entry);

// Each throws riegeli::FormatError on malformed wire data or when a field the reference reader
// requires is absent (footer_offset, magic, array_record_metadata, chunk_offset). Unknown
// fields are skipped; for repeated scalars the last value wins.
Postscript ParsePostscript(std::string_view bytes);
FooterMetadata ParseFooterMetadata(std::string_view bytes);
FooterEntry ParseFooterEntry(std::string_view bytes);

}  // namespace spelt::internal::array_record

#endif  // SPELT_SRC_ARRAY_RECORD_LAYOUT_H_
