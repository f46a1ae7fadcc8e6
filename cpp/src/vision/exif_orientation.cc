// JpegExifOrientation and ApplyExifOrientation (spelt/vision.h): the EXIF Orientation tag of a
// JPEG (EXIF 2.3, its TIFF 6.0 structure: an 8-byte header naming the byte order and IFD0's
// offset; IFD entries of 12 bytes: tag, type, count, value) and Pillow's transposes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "spelt/vision.h"

namespace spelt::vision {
namespace {

constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kTypeShort = 3;
constexpr uint16_t kTypeLong = 4;

// A TIFF structure in either byte order; reads outside it give nullopt.
class Tiff {
 public:
  explicit Tiff(std::span<const uint8_t> data) : data_(data) {}
  // Reads the header: false unless "II*\0" or "MM\0*".
  bool ReadHeader() {
    if (data_.size() < 8) return false;
    if (data_[0] == 'I' && data_[1] == 'I') {
      little_ = true;
    } else if (data_[0] != 'M' || data_[1] != 'M') {
      return false;
    }
    return U16(2) == 42;
  }
  std::optional<uint32_t> U16(size_t at) const {
    if (at + 2 > data_.size()) return std::nullopt;
    return little_ ? data_[at] | data_[at + 1] << 8 : data_[at] << 8 | data_[at + 1];
  }
  std::optional<uint32_t> U32(size_t at) const {
    const std::optional<uint32_t> a = U16(at), b = U16(at + 2);
    if (!a || !b) return std::nullopt;
    return little_ ? *a | *b << 16 : *a << 16 | *b;
  }

 private:
  std::span<const uint8_t> data_;
  bool little_ = false;
};

// The orientation in a TIFF structure's IFD0, or 1.
int OrientationOfTiff(std::span<const uint8_t> tiff_data) {
  Tiff tiff(tiff_data);
  if (!tiff.ReadHeader()) return 1;
  const std::optional<uint32_t> ifd = tiff.U32(4);
  if (!ifd) return 1;
  const std::optional<uint32_t> entries = tiff.U16(*ifd);
  if (!entries) return 1;
  for (uint32_t i = 0; i < *entries; ++i) {
    const size_t entry = size_t{*ifd} + 2 + size_t{12} * i;
    const std::optional<uint32_t> tag = tiff.U16(entry), type = tiff.U16(entry + 2),
                                  count = tiff.U32(entry + 4);
    if (!tag || !type || !count) return 1;
    if (*tag != kOrientationTag) continue;
    if (*count != 1) return 1;
    std::optional<uint32_t> value;
    if (*type == kTypeShort) value = tiff.U16(entry + 8);
    if (*type == kTypeLong) value = tiff.U32(entry + 8);
    return value && *value >= 1 && *value <= 8 ? static_cast<int>(*value) : 1;
  }
  return 1;
}

}  // namespace

int JpegExifOrientation(std::span<const uint8_t> data) {
  if (data.size() < 4 || data[0] != 0xFF || data[1] != 0xD8) return 1;
  size_t at = 2;
  // Marker segments up to the first scan (SOS) or the end: 0xFF, the marker, a 2-byte length
  // that counts itself.
  while (at + 4 <= data.size()) {
    if (data[at] != 0xFF) return 1;
    const uint8_t marker = data[at + 1];
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return 1;  // SOS, EOI
    const size_t length = size_t{data[at + 2]} << 8 | data[at + 3];
    if (length < 2 || at + 2 + length > data.size()) return 1;
    const std::span<const uint8_t> body = data.subspan(at + 4, length - 2);
    static constexpr uint8_t kExif[] = {'E', 'x', 'i', 'f', 0, 0};
    if (marker == 0xE1 && body.size() >= 6 && std::equal(kExif, kExif + 6, body.begin())) {
      return OrientationOfTiff(body.subspan(6));  // the first Exif segment, as Pillow
    }
    at += 2 + length;
  }
  return 1;
}

Image ApplyExifOrientation(const Image& image, int orientation) {
  if (orientation < 1 || orientation > 8) {
    throw std::invalid_argument("ApplyExifOrientation: orientation " +
                                std::to_string(orientation) + " is not in 1..8");
  }
  const int h = image.height, w = image.width, c = image.channels;
  const bool swap = orientation >= 5;
  Image out = Image::Zeros(swap ? w : h, swap ? h : w, c);
  // For output pixel (y, x), the source pixel (sy, sx) (Pillow's Image.transpose methods).
  for (int y = 0; y < out.height; ++y) {
    uint8_t* dst = out.row(y);
    for (int x = 0; x < out.width; ++x, dst += c) {
      int sy = y, sx = x;
      switch (orientation) {
        case 2: sx = w - 1 - x; break;                   // FLIP_LEFT_RIGHT
        case 3: sy = h - 1 - y; sx = w - 1 - x; break;   // ROTATE_180
        case 4: sy = h - 1 - y; break;                   // FLIP_TOP_BOTTOM
        case 5: sy = x; sx = y; break;                   // TRANSPOSE
        case 6: sy = h - 1 - x; sx = y; break;           // ROTATE_270
        case 7: sy = h - 1 - x; sx = w - 1 - y; break;   // TRANSVERSE
        case 8: sy = x; sx = w - 1 - y; break;           // ROTATE_90
        default: break;
      }
      const uint8_t* src = image.row(sy) + static_cast<size_t>(sx) * c;
      for (int k = 0; k < c; ++k) dst[k] = src[k];
    }
  }
  return out;
}

}  // namespace spelt::vision
