// The record framing of format.h.
#include "tfrecord/format.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <cstring>

#include "spelt/errors.h"

namespace spelt::internal::tfrecord {
namespace {

uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));  // the format is little-endian, as is every target of Spelt
  return v;
}

void StoreU32(uint32_t v, char* p) { std::memcpy(p, &v, sizeof(v)); }

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareCrc32c(uint64_t v) {
  return ~static_cast<uint32_t>(__builtin_ia32_crc32di(0xffffffffu, v));
}
#endif

// The CRC32C of the 8 length bytes at `p`: one instruction where the CPU has it (every header
// of a file is checked, and ISA-L's call costs more than the CRC of 8 bytes), else ISA-L.
uint32_t LengthCrc32c(const char* p) {
#if defined(__x86_64__)
  static const bool has_sse42 = (__builtin_cpu_init(), __builtin_cpu_supports("sse4.2"));
  if (has_sse42) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return HardwareCrc32c(v);
  }
#endif
  return Crc32c(std::string_view(p, sizeof(uint64_t)));
}

}  // namespace

uint32_t Crc32c(std::string_view data, uint32_t crc) {
  // crc32_iscsi neither inverts its input nor its output, and takes an int length.
  crc = ~crc;
  auto* p = reinterpret_cast<unsigned char*>(const_cast<char*>(data.data()));
  size_t n = data.size();
  constexpr size_t kMaxPiece = size_t{1} << 30;
  while (n > 0) {
    const size_t piece = std::min(n, kMaxPiece);
    crc = crc32_iscsi(p, static_cast<int>(piece), crc);
    p += piece;
    n -= piece;
  }
  return ~crc;
}

void EncodeHeader(uint64_t length, char* header) {
  std::memcpy(header, &length, sizeof(length));
  StoreU32(MaskCrc(LengthCrc32c(header)), header + sizeof(length));
}

void EncodeFooter(std::string_view payload, char* footer) {
  StoreU32(MaskCrc(Crc32c(payload)), footer);
}

std::optional<uint64_t> DecodeHeader(const char* header) {
  if (MaskCrc(LengthCrc32c(header)) != LoadU32(header + sizeof(uint64_t))) return std::nullopt;
  uint64_t length;
  std::memcpy(&length, header, sizeof(length));
  return length;
}

bool FooterMatches(std::string_view payload, const char* footer) {
  return MaskCrc(Crc32c(payload)) == LoadU32(footer);
}

void CheckFooter(const std::string& path, uint64_t offset, std::string_view payload,
                 const char* footer) {
  if (!FooterMatches(payload, footer)) {
    ThrowCorrupt(path, offset,
                 "the masked CRC32C of the " + std::to_string(payload.size()) +
                     "-byte payload does not match (the record's data is corrupt)");
  }
}

void ThrowCorrupt(const std::string& path, uint64_t offset, std::string_view detail) {
  throw CorruptFileError(path, offset, detail, kFormat);
}

std::string TruncatedDetail(uint64_t length, uint64_t available) {
  return "the file ends inside a record (truncated?): its header says " +
         std::to_string(length) + " payload bytes + " + std::to_string(kFooterSize) +
         " CRC bytes, only " + std::to_string(available) + " follow";
}

uint64_t CheckedLength(const std::string& path, uint64_t offset, const char* header, size_t have,
                       uint64_t after_header) {
  if (have < kHeaderSize) {
    ThrowCorrupt(path, offset, "the file ends inside a record header (truncated?): " +
                                   std::to_string(have) + " of " +
                                   std::to_string(kHeaderSize) + " bytes");
  }
  const std::optional<uint64_t> length = DecodeHeader(header);
  if (!length) ThrowCorrupt(path, offset, "the masked CRC32C of the record length does not match");
  if (*length > after_header || after_header - *length < kFooterSize) {
    ThrowCorrupt(path, offset, TruncatedDetail(*length, after_header));
  }
  return *length;
}

}  // namespace spelt::internal::tfrecord
