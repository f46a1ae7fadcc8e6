// Internal: unsigned LEB128 varints (protobuf's varint64), as used by Riegeli and by protobuf
// wire format.
#ifndef SPELT_SRC_RIEGELI_VARINT_H_
#define SPELT_SRC_RIEGELI_VARINT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace spelt::internal::riegeli {

inline constexpr size_t kMaxVarint64Size = 10;

inline void AppendVarint64(uint64_t value, std::string& out) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// Reads a varint from the front of `in` and removes it. Returns false (leaving `in` as it was)
// if `in` ends inside the varint or the varint does not fit in 64 bits.
inline bool ReadVarint64(std::string_view& in, uint64_t& value) {
  uint64_t result = 0;
  for (size_t i = 0; i < in.size() && i < kMaxVarint64Size; ++i) {
    const auto byte = static_cast<uint8_t>(in[i]);
    if (i == kMaxVarint64Size - 1 && byte > 1) return false;  // bits beyond the 64th
    result |= uint64_t{byte & 0x7fu} << (7 * i);
    if (byte < 0x80) {
      in.remove_prefix(i + 1);
      value = result;
      return true;
    }
  }
  return false;
}

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_VARINT_H_
