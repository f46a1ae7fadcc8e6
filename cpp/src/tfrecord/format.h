// Internal: the framing of one TFRecord record (see spelt/tfrecord.h) and its masked CRC32C,
// computed by Intel's ISA-L (crc32_iscsi, which picks the fastest instructions at run time).
#ifndef SPELT_SRC_TFRECORD_FORMAT_H_
#define SPELT_SRC_TFRECORD_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spelt::internal::tfrecord {

// uint64 length + uint32 masked CRC of the length.
inline constexpr size_t kHeaderSize = 12;
// uint32 masked CRC of the payload.
inline constexpr size_t kFooterSize = 4;
// The format name in CorruptFileError messages.
inline constexpr std::string_view kFormat = "TFRecord";

// CRC32C (Castagnoli) of `data`, continuing from `crc` (the CRC of the bytes before).
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);
// TensorFlow's mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// The header of a record of `length` bytes.
void EncodeHeader(uint64_t length, char* header);
// The footer of `payload`.
void EncodeFooter(std::string_view payload, char* footer);
// The length in `header` (kHeaderSize bytes), or nullopt if its CRC does not match.
std::optional<uint64_t> DecodeHeader(const char* header);
// Whether `footer` (kFooterSize bytes) holds the masked CRC of `payload`.
bool FooterMatches(std::string_view payload, const char* footer);

// Throws CorruptFileError naming `path` and `offset` (the record's) unless `footer` holds the
// masked CRC of `payload`.
void CheckFooter(const std::string& path, uint64_t offset, std::string_view payload,
                 const char* footer);
// Throws CorruptFileError(path, offset, detail, "TFRecord").
[[noreturn]] void ThrowCorrupt(const std::string& path, uint64_t offset, std::string_view detail);
// The detail of a record whose header was read but whose payload is incomplete.
std::string TruncatedDetail(uint64_t length, uint64_t available);
// The payload length in the header of the record at `offset` of `path`, of which `have` bytes
// are at `header` (kHeaderSize or fewer, where the file ends), with at most `after_header`
// bytes in the file after the header. Throws CorruptFileError if the header is cut short, its
// CRC does not match, or the rest of the file cannot hold the payload and its footer.
uint64_t CheckedLength(const std::string& path, uint64_t offset, const char* header, size_t have,
                       uint64_t after_header);

}  // namespace spelt::internal::tfrecord

#endif  // SPELT_SRC_TFRECORD_FORMAT_H_
