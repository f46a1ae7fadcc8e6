// JpegExifOrientation and ApplyExifOrientation (spelt/vision.h): the EXIF Orientation tag of a
// JPEG (EXIF 2.3, its TIFF 6.0 structure: an 8-byte header naming the byte order and IFD0's
// offset; IFD entries of 12 bytes: tag, type, count, value; else an XMP packet's
// tiff:Orientation, as Pillow's getexif() falls back to) and Pillow's transposes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

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

// The Orientation tag in a TIFF structure's IFD0: its value (any number; 0 for one that is not
// a single SHORT or LONG), or nullopt where there is no such tag or the structure is damaged.
std::optional<uint32_t> OrientationOfTiff(std::span<const uint8_t> tiff_data) {
  Tiff tiff(tiff_data);
  if (!tiff.ReadHeader()) return std::nullopt;
  const std::optional<uint32_t> ifd = tiff.U32(4);
  if (!ifd) return std::nullopt;
  const std::optional<uint32_t> entries = tiff.U16(*ifd);
  if (!entries) return std::nullopt;
  for (uint32_t i = 0; i < *entries; ++i) {
    const size_t entry = size_t{*ifd} + 2 + size_t{12} * i;
    const std::optional<uint32_t> tag = tiff.U16(entry), type = tiff.U16(entry + 2),
                                  count = tiff.U32(entry + 4);
    if (!tag || !type || !count) return std::nullopt;
    if (*tag != kOrientationTag) continue;
    std::optional<uint32_t> value;
    if (*count == 1 && *type == kTypeShort) value = tiff.U16(entry + 8);
    if (*count == 1 && *type == kTypeLong) value = tiff.U32(entry + 8);
    return value.value_or(0);
  }
  return std::nullopt;
}

// The orientation an XMP packet gives as Pillow's Image.getexif() reads it: the digit after the
// first "tiff:Orientation" followed by '="' or '>' (its regex tiff:Orientation(="|>)([0-9])),
// or nullopt.
std::optional<uint32_t> OrientationOfXmp(std::span<const uint8_t> xmp) {
  static constexpr std::string_view kTag = "tiff:Orientation";
  const std::string_view text(reinterpret_cast<const char*>(xmp.data()), xmp.size());
  for (size_t at = text.find(kTag); at != std::string_view::npos; at = text.find(kTag, at + 1)) {
    size_t v = at + kTag.size();
    if (text.substr(v, 2) == "=\"") {
      v += 2;
    } else if (text.substr(v, 1) == ">") {
      v += 1;
    } else {
      continue;
    }
    if (v < text.size() && text[v] >= '0' && text[v] <= '9') return text[v] - '0';
  }
  return std::nullopt;
}

bool StartsWith(std::span<const uint8_t> body, std::string_view prefix) {
  return body.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), body.begin(),
                    [](char a, uint8_t b) { return static_cast<uint8_t>(a) == b; });
}

}  // namespace

int JpegExifOrientation(std::span<const uint8_t> data) {
  if (data.size() < 4 || data[0] != 0xFF || data[1] != 0xD8) return 1;
  static constexpr std::string_view kExif("Exif\0\0", 6);
  static constexpr std::string_view kXmp("http://ns.adobe.com/xap/1.0/\0", 29);
  std::optional<uint32_t> exif, xmp;
  bool exif_seen = false;
  size_t at = 2;
  // Marker segments up to the first scan (SOS) or the end: 0xFF, the marker, a 2-byte length
  // that counts itself. As Pillow: the first Exif segment, the last XMP one.
  while (at + 4 <= data.size() && data[at] == 0xFF) {
    const uint8_t marker = data[at + 1];
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) break;  // SOS, EOI
    const size_t length = size_t{data[at + 2]} << 8 | data[at + 3];
    if (length < 2 || at + 2 + length > data.size()) break;
    const std::span<const uint8_t> body = data.subspan(at + 4, length - 2);
    if (marker == 0xE1 && !exif_seen && StartsWith(body, kExif)) {
      exif_seen = true;
      exif = OrientationOfTiff(body.subspan(kExif.size()));
    } else if (marker == 0xE1 && StartsWith(body, kXmp)) {
      xmp = OrientationOfXmp(body.subspan(kXmp.size()));
    }
    at += 2 + length;
  }
  // The EXIF tag where there is one (whatever its value), else XMP's (Pillow's getexif()).
  const uint32_t orientation = exif ? *exif : xmp.value_or(1);
  return orientation >= 1 && orientation <= 8 ? static_cast<int>(orientation) : 1;
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
