#include "array_record/layout.h"

#include "riegeli/format.h"
#include "riegeli/varint.h"

namespace spelt::internal::array_record {
namespace {

using riegeli::FormatError;

enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void AppendVarintField(uint32_t number, uint64_t value, std::string& out) {
  riegeli::AppendVarint64(uint64_t{number} << 3 | kVarint, out);
  riegeli::AppendVarint64(value, out);
}

void AppendBytesField(uint32_t number, std::string_view value, std::string& out) {
  riegeli::AppendVarint64(uint64_t{number} << 3 | kLengthDelimited, out);
  riegeli::AppendVarint64(value.size(), out);
  out.append(value);
}

// One field of a message: its number and, depending on its wire type, its varint value or its
// bytes (fixed-width fields are skipped and report neither).
struct Field {
  uint64_t number = 0;
  WireType wire_type = kVarint;
  uint64_t varint = 0;
  std::string_view bytes;
};

// Reads the next field from the front of `in`. Returns false at the end of `in`.
bool NextField(std::string_view& in, const char* message, Field& field) {
  if (in.empty()) return false;
  uint64_t key = 0;
  if (!riegeli::ReadVarint64(in, key)) throw FormatError(std::string(message) + ": bad field key");
  field = Field{key >> 3, static_cast<WireType>(key & 7), 0, {}};
  uint64_t skip = 0;
  switch (field.wire_type) {
    case kVarint:
      if (!riegeli::ReadVarint64(in, field.varint)) {
        throw FormatError(std::string(message) + ": bad varint");
      }
      return true;
    case kLengthDelimited:
      if (!riegeli::ReadVarint64(in, skip) || skip > in.size()) {
        throw FormatError(std::string(message) + ": bad length-delimited field");
      }
      field.bytes = in.substr(0, skip);
      break;
    case kFixed64: skip = 8; break;
    case kFixed32: skip = 4; break;
    default:
      throw FormatError(std::string(message) + ": unsupported wire type " +
                        std::to_string(key & 7));
  }
  if (skip > in.size()) throw FormatError(std::string(message) + ": truncated field");
  in.remove_prefix(skip);
  return true;
}

// Whether `field` is field `number` of the expected wire type (a field with a known number and
// another wire type is malformed).
bool Is(const Field& field, uint64_t number, WireType wire_type, const char* message) {
  if (field.number != number) return false;
  if (field.wire_type != wire_type) {
    throw FormatError(std::string(message) + ": field " + std::to_string(number) +
                      " has the wrong wire type");
  }
  return true;
}

void Require(bool present, const char* message, const char* field) {
  if (!present) throw FormatError(std::string(message) + ": required field " + field + " missing");
}

}  // namespace

std::string Serialize(const Postscript& postscript) {
  std::string out;
  AppendVarintField(1, postscript.footer_offset, out);
  AppendVarintField(2, postscript.magic, out);
  return out;
}

std::string Serialize(const FooterMetadata& metadata) {
  std::string inner;
  AppendVarintField(1, metadata.version, inner);
  AppendVarintField(2, metadata.num_chunks, inner);
  AppendVarintField(3, metadata.num_records, inner);
  AppendBytesField(4, metadata.writer_options, inner);
  std::string out;
  AppendBytesField(1, inner, out);
  return out;
}

std::string Serialize(const FooterEntry& entry) {
  std::string out;
  AppendVarintField(1, entry.chunk_offset, out);
  AppendVarintField(2, entry.decoded_data_size, out);
  AppendVarintField(3, entry.num_records, out);
  return out;
}

Postscript ParsePostscript(std::string_view bytes) {
  static constexpr char kMessage[] = "RiegeliPostscript";
  Postscript postscript;
  bool has_footer_offset = false, has_magic = false;
  for (Field f; NextField(bytes, kMessage, f);) {
    if (Is(f, 1, kVarint, kMessage)) {
      postscript.footer_offset = f.varint;
      has_footer_offset = true;
    } else if (Is(f, 2, kVarint, kMessage)) {
      postscript.magic = f.varint;
      has_magic = true;
    }
  }
  Require(has_footer_offset, kMessage, "footer_offset");
  Require(has_magic, kMessage, "magic");
  return postscript;
}

FooterMetadata ParseFooterMetadata(std::string_view bytes) {
  static constexpr char kMessage[] = "RiegeliFooterMetadata";
  FooterMetadata metadata;
  bool has_metadata = false;
  for (Field f; NextField(bytes, kMessage, f);) {
    if (!Is(f, 1, kLengthDelimited, kMessage)) continue;
    has_metadata = true;  // occurrences of a message field merge
    for (Field g; NextField(f.bytes, kMessage, g);) {
      if (Is(g, 1, kVarint, kMessage)) {
        metadata.version = g.varint;
      } else if (Is(g, 2, kVarint, kMessage)) {
        metadata.num_chunks = g.varint;
      } else if (Is(g, 3, kVarint, kMessage)) {
        metadata.num_records = g.varint;
      } else if (Is(g, 4, kLengthDelimited, kMessage)) {
        metadata.writer_options = std::string(g.bytes);
      }
    }
  }
  Require(has_metadata, kMessage, "array_record_metadata");
  return metadata;
}

FooterEntry ParseFooterEntry(std::string_view bytes) {
  static constexpr char kMessage[] = "ArrayRecordFooter";
  FooterEntry entry;
  bool has_chunk_offset = false;
  for (Field f; NextField(bytes, kMessage, f);) {
    if (Is(f, 1, kVarint, kMessage)) {
      entry.chunk_offset = f.varint;
      has_chunk_offset = true;
    } else if (Is(f, 2, kVarint, kMessage)) {
      entry.decoded_data_size = f.varint;
    } else if (Is(f, 3, kVarint, kMessage)) {
      entry.num_records = f.varint;
    }
  }
  Require(has_chunk_offset, kMessage, "chunk_offset");
  return entry;
}

}  // namespace spelt::internal::array_record
