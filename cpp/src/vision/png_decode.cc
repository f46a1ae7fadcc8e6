// DecodePng (spelt/vision.h): a PNG decoder on zlib (PNG specification, ISO/IEC 15948, third
// edition: chunks, IHDR, PLTE, IDAT, scanline filters, Adam7), converting to RGB as Pillow's
// Image.open(f).convert("RGB") does. Pillow decodes PNG the same way, with its own decoder on
// zlib; libpng is not used because Debian's libpng16.a is not position-independent and its
// libpng16.so needs glibc 2.29 (pow), so neither could go into the manylinux_2_28 wheel.
//
// As Pillow: CRCs are checked on the chunks before the image data, not on IDAT; chunks after
// the image data are not read; palette entries, gray levels (1, 2 and 4 bits scaled to 8 by
// bit replication: x255, x85, x17) and 16-bit samples (their high byte) to RGB; alpha and tRNS
// dropped, not composited; no gamma or colour management. Animated PNGs (acTL) and palette
// indices past the palette are left to the caller's fallback (std::invalid_argument).
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "spelt/errors.h"
#include "spelt/vision.h"
#include "vision/decoded_size.h"

namespace spelt::vision {
namespace {

constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

// Adam7's passes: first row, first column, row step, column step.
constexpr std::array<std::array<int, 4>, 7> kAdam7 = {{{0, 0, 8, 8},
                                                       {0, 4, 8, 8},
                                                       {4, 0, 8, 4},
                                                       {0, 2, 4, 4},
                                                       {2, 0, 4, 2},
                                                       {0, 1, 2, 2},
                                                       {1, 0, 2, 1}}};

uint32_t BigEndian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

struct Header {
  int width = 0;
  int height = 0;
  int depth = 0;
  int color_type = 0;
  bool interlaced = false;
  int channels = 0;  // samples per pixel
  // Bytes per complete pixel for the filters (at least 1).
  int filter_bpp() const { return std::max(1, channels * depth / 8); }
  size_t row_bytes(int width_px) const {
    return (static_cast<size_t>(width_px) * channels * depth + 7) / 8;
  }
};

// A zlib inflate stream, ended when it goes out of scope.
struct Inflater {
  z_stream z{};
  bool open = false;
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() {
    if (open) inflateEnd(&z);
  }
};

class PngDecoder {
 public:
  explicit PngDecoder(std::span<const uint8_t> data) : data_(data) {}

  Image Decode() {
    if (data_.size() < 8 || !std::equal(kSignature, kSignature + 8, data_.begin())) {
      Fail("not a PNG file");
    }
    std::vector<uint8_t> raw;  // the inflated, filtered scanlines of every pass
    Inflater inflater;
    z_stream& z = inflater.z;
    bool done = false;  // all of `raw` inflated
    size_t at = 8;
    // Chunks up to the end of the image data (Pillow reads no further for the pixels).
    while (!done) {
      if (at + 8 > data_.size()) Fail(inflater.open ? "truncated image data" : "no image data");
      const uint32_t length = BigEndian32(&data_[at]);
      const uint8_t* type = &data_[at + 4];
      std::string name(reinterpret_cast<const char*>(type), 4);  // letters in a valid file
      for (char& c : name) c = std::isalpha(static_cast<unsigned char>(c)) ? c : '?';
      if (length > 0x7FFFFFFFu || at + 12 + length > data_.size()) {
        Fail(name == "IDAT" ? "truncated image data" : "truncated " + name + " chunk");
      }
      const uint8_t* body = type + 4;
      if (!inflater.open && name != "IDAT" &&
          crc32(crc32(0, type, 4), body, length) != BigEndian32(body + length)) {
        Fail("bad CRC in the " + name + " chunk");
      }
      if (name == "IHDR") {
        ReadHeader(body, length);
      } else if (name == "PLTE") {
        palette_.assign(body, body + length - length % 3);
      } else if (name == "acTL") {
        throw std::invalid_argument("DecodePng: an animated PNG is not decoded natively");
      } else if (name == "IDAT") {
        if (!inflater.open) {
          if (header_.width == 0) Fail("IDAT before IHDR");
          if (header_.color_type == 3 && palette_.empty()) Fail("a palette image without PLTE");
          const size_t raw_size = RawSize();  // 16-bit RGBA: 8 bytes a pixel
          if (raw_size > static_cast<size_t>(internal::kMaxDecodedBytes)) {
            Fail("image data of " + std::to_string(raw_size) + " bytes, above 2**31");
          }
          raw.resize(raw_size);
          if (inflateInit(&z) != Z_OK) Fail("zlib's inflateInit failed");
          inflater.open = true;
          z.next_out = raw.data();
          z.avail_out = static_cast<uInt>(raw.size());
        }
        z.next_in = const_cast<Bytef*>(body);
        z.avail_in = length;
        while (z.avail_in > 0 && z.avail_out > 0) {
          const int rc = inflate(&z, Z_NO_FLUSH);
          if (rc == Z_STREAM_END) break;
          if (rc != Z_OK) Fail(std::string("corrupt image data: ") + (z.msg ? z.msg : "inflate"));
        }
        done = z.avail_out == 0;
      } else if (name == "IEND") {
        Fail(inflater.open ? "truncated image data" : "no image data");
      }
      at += 12 + length;
    }
    return Reconstruct(raw);
  }

 private:
  [[noreturn]] void Fail(const std::string& detail) const {
    throw CorruptImageError("PNG", data_.size(), detail);
  }

  void ReadHeader(const uint8_t* body, uint32_t length) {
    if (length != 13) Fail("IHDR of " + std::to_string(length) + " bytes");
    const uint32_t width = BigEndian32(body), height = BigEndian32(body + 4);
    header_.depth = body[8];
    header_.color_type = body[9];
    if (width == 0 || height == 0 || width > 0x7FFFFFFFu || height > 0x7FFFFFFFu) {
      Fail("bad image size " + std::to_string(width) + "x" + std::to_string(height));
    }
    const int d = header_.depth;
    switch (header_.color_type) {
      case 0: header_.channels = 1; break;  // gray: 1, 2, 4, 8, 16 bits
      case 2: header_.channels = 3; break;  // RGB: 8, 16
      case 3: header_.channels = 1; break;  // palette: 1, 2, 4, 8
      case 4: header_.channels = 2; break;  // gray + alpha: 8, 16
      case 6: header_.channels = 4; break;  // RGBA: 8, 16
      default: Fail("bad color type " + std::to_string(header_.color_type));
    }
    const bool depth_ok =
        header_.color_type == 0   ? (d == 1 || d == 2 || d == 4 || d == 8 || d == 16)
        : header_.color_type == 3 ? (d == 1 || d == 2 || d == 4 || d == 8)
                                  : (d == 8 || d == 16);
    if (!depth_ok || body[10] != 0 || body[11] != 0 || body[12] > 1) {
      Fail("unsupported IHDR (depth " + std::to_string(d) + ", color type " +
           std::to_string(header_.color_type) + ")");
    }
    header_.interlaced = body[12] == 1;
    internal::CheckDecodedSize("PNG", data_.size(), height, width);
    header_.width = static_cast<int>(width);
    header_.height = static_cast<int>(height);
  }

  // The size of a pass's reduced image (0 where it is empty).
  std::pair<int, int> PassSize(int pass) const {
    if (!header_.interlaced) return {header_.height, header_.width};
    const auto [y0, x0, dy, dx] = kAdam7[pass];
    const int h = header_.height > y0 ? (header_.height - y0 + dy - 1) / dy : 0;
    const int w = header_.width > x0 ? (header_.width - x0 + dx - 1) / dx : 0;
    return {h, w};
  }

  size_t RawSize() const {
    size_t total = 0;
    for (int pass = 0; pass < (header_.interlaced ? 7 : 1); ++pass) {
      const auto [h, w] = PassSize(pass);
      if (h > 0 && w > 0) total += static_cast<size_t>(h) * (1 + header_.row_bytes(w));
    }
    return total;
  }

  // Undoes the scanline filters of each pass in place and writes its pixels, as RGB, into
  // their places in the image.
  Image Reconstruct(std::vector<uint8_t>& raw) const {
    Image image = Image::Zeros(header_.height, header_.width, 3);
    const int bpp = header_.filter_bpp();
    uint8_t* p = raw.data();
    for (int pass = 0; pass < (header_.interlaced ? 7 : 1); ++pass) {
      const auto [h, w] = PassSize(pass);
      if (h == 0 || w == 0) continue;
      const size_t n = header_.row_bytes(w);
      const std::vector<uint8_t> zeros(n, 0);
      const uint8_t* prior = zeros.data();
      for (int y = 0; y < h; ++y, p += 1 + n) {
        uint8_t* row = p + 1;
        Unfilter(p[0], row, prior, n, bpp);
        prior = row;
        const int iy = header_.interlaced ? kAdam7[pass][0] + y * kAdam7[pass][2] : y;
        const int x0 = header_.interlaced ? kAdam7[pass][1] : 0;
        const int dx = header_.interlaced ? kAdam7[pass][3] : 1;
        ToRgb(row, w, image.row(iy), x0, dx);
      }
    }
    return image;
  }

  // Undoes a row's filter in place. `prior` is the previous row of the pass, unfiltered (all
  // zeros before the first). Bytes before the first pixel count as zeros (the spec's a and c).
  void Unfilter(uint8_t filter, uint8_t* row, const uint8_t* prior, size_t n, int bpp) const {
    const size_t b = std::min(static_cast<size_t>(bpp), n);
    switch (filter) {
      case 0:
        return;
      case 1:
        for (size_t i = b; i < n; ++i) row[i] = static_cast<uint8_t>(row[i] + row[i - b]);
        return;
      case 2:
        for (size_t i = 0; i < n; ++i) row[i] = static_cast<uint8_t>(row[i] + prior[i]);
        return;
      case 3:
        for (size_t i = 0; i < b; ++i) row[i] = static_cast<uint8_t>(row[i] + prior[i] / 2);
        for (size_t i = b; i < n; ++i) {
          row[i] = static_cast<uint8_t>(row[i] + (row[i - b] + prior[i]) / 2);
        }
        return;
      case 4:
        for (size_t i = 0; i < b; ++i) row[i] = static_cast<uint8_t>(row[i] + prior[i]);
        for (size_t i = b; i < n; ++i) {
          const int a = row[i - b], up = prior[i], c = prior[i - b];
          const int pa = std::abs(up - c), pb = std::abs(a - c), pc = std::abs(a + up - 2 * c);
          const int pred = (pa <= pb && pa <= pc) ? a : (pb <= pc ? up : c);
          row[i] = static_cast<uint8_t>(row[i] + pred);
        }
        return;
      default:
        Fail("bad filter type " + std::to_string(filter));
    }
  }

  // Sample `s` of pixel `x` of an unfiltered row, 8 bits (16-bit: the high byte; below 8 bits:
  // the raw value, for palette indices, or scaled to 8 bits for gray).
  int Sample(const uint8_t* row, int x, int s) const {
    const int d = header_.depth;
    if (d == 8) return row[static_cast<size_t>(x) * header_.channels + s];
    if (d == 16) return row[(static_cast<size_t>(x) * header_.channels + s) * 2];
    const int bit = x * d;  // one sample per pixel below 8 bits
    const int v = (row[bit / 8] >> (8 - d - bit % 8)) & ((1 << d) - 1);
    return header_.color_type == 3 ? v : v * 255 / ((1 << d) - 1);
  }

  void ToRgb(const uint8_t* row, int w, uint8_t* out, int x0, int dx) const {
    if (header_.depth == 8 && (header_.color_type == 2 || header_.color_type == 6)) {
      const int c = header_.channels;  // RGB or RGBA: the first 3 bytes of each pixel
      if (c == 3 && dx == 1) {
        std::memcpy(out + static_cast<size_t>(x0) * 3, row, static_cast<size_t>(w) * 3);
        return;
      }
      for (int x = 0; x < w; ++x) {
        std::memcpy(out + static_cast<size_t>(x0 + x * dx) * 3,
                    row + static_cast<size_t>(x) * c, 3);
      }
      return;
    }
    for (int x = 0; x < w; ++x) {
      uint8_t* px = out + static_cast<size_t>(x0 + x * dx) * 3;
      switch (header_.color_type) {
        case 0:
        case 4:
          px[0] = px[1] = px[2] = static_cast<uint8_t>(Sample(row, x, 0));
          break;
        case 3: {
          const size_t index = static_cast<size_t>(Sample(row, x, 0));
          if (3 * index + 3 > palette_.size()) {
            throw std::invalid_argument("DecodePng: a palette index past the palette");
          }
          std::copy_n(&palette_[3 * index], 3, px);
          break;
        }
        default:  // 2, 6
          for (int c = 0; c < 3; ++c) px[c] = static_cast<uint8_t>(Sample(row, x, c));
      }
    }
  }

  std::span<const uint8_t> data_;
  Header header_;
  std::vector<uint8_t> palette_;
};

}  // namespace

Image DecodePng(std::span<const uint8_t> data) { return PngDecoder(data).Decode(); }

}  // namespace spelt::vision
