// DecodePng, DecodeWebp, JpegExifOrientation and ApplyExifOrientation (spelt/vision.h): PNGs
// written here (8 and 16 bits, palette, gray + alpha, every filter, interlaced) and WebPs with
// libwebp decode to their pixels; truncated and garbage input throws CorruptImageError; the EXIF
// orientation is read in both byte orders and from XMP, and damaged EXIF data reads as 1.
// Equality with Pillow's decode of the same bytes is tested in tests/test_vision.py and
// tests/test_vision_native.py.
#include <gtest/gtest.h>
#include <webp/encode.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "spelt/errors.h"
#include "spelt/vision.h"
#include "vision_test_util.h"

namespace spelt::vision {
namespace {

// A height x width image with channels interleaved, values from a simple pattern.
std::vector<uint16_t> Pattern(int height, int width, int channels, int max) {
  std::vector<uint16_t> v(static_cast<size_t>(height) * width * channels);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<uint16_t>((i * 7919 + i / 3) % (max + 1));
  }
  return v;
}

void Append32(std::vector<uint8_t>& out, uint32_t v) {
  out.insert(out.end(), {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)});
}

void AppendChunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& body) {
  Append32(out, static_cast<uint32_t>(body.size()));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), body.begin(), body.end());
  Append32(out, crc32(0, out.data() + start, static_cast<uInt>(out.size() - start)));
}

// Row y of a pass filtered with filter type y % 5 (None, Sub, Up, Average, Paeth), so that
// every filter is undone by the decoder.
void AppendFiltered(std::vector<uint8_t>& out, const std::vector<uint8_t>& row,
                    const std::vector<uint8_t>& prior, int y, int bpp) {
  const int filter = y % 5;
  out.push_back(static_cast<uint8_t>(filter));
  for (size_t i = 0; i < row.size(); ++i) {
    const int a = i >= static_cast<size_t>(bpp) ? row[i - bpp] : 0;
    const int b = prior.empty() ? 0 : prior[i];
    const int c = prior.empty() || i < static_cast<size_t>(bpp) ? 0 : prior[i - bpp];
    const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
    const int paeth = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
    const int predictor[] = {0, a, b, (a + b) / 2, paeth};
    out.push_back(static_cast<uint8_t>(row[i] - predictor[filter]));
  }
}

// A PNG of `samples` (height x width pixels of `channels` samples of `depth` bits: 8 or 16),
// written here (zlib, filters of every type, Adam7 if interlaced); a palette of 256 entries
// (i, 255 - i, 7) for color type 3.
std::vector<uint8_t> EncodePng(const std::vector<uint16_t>& samples, int height, int width,
                               int color_type, int depth, bool interlaced) {
  const int channels = color_type == 0 || color_type == 3 ? 1
                       : color_type == 4                  ? 2
                       : color_type == 2                  ? 3
                                                          : 4;
  const int bytes_per_sample = depth / 8;
  const int bpp = channels * bytes_per_sample;
  std::vector<uint8_t> filtered;
  const int passes[7][4] = {{0, 0, 8, 8}, {0, 4, 8, 8}, {4, 0, 8, 4}, {0, 2, 4, 4},
                            {2, 0, 4, 2}, {0, 1, 2, 2}, {1, 0, 2, 1}};
  for (int pass = 0; pass < (interlaced ? 7 : 1); ++pass) {
    const int y0 = interlaced ? passes[pass][0] : 0, x0 = interlaced ? passes[pass][1] : 0;
    const int dy = interlaced ? passes[pass][2] : 1, dx = interlaced ? passes[pass][3] : 1;
    std::vector<uint8_t> prior;
    int y_in_pass = 0;
    for (int y = y0; y < height; y += dy, ++y_in_pass) {
      std::vector<uint8_t> row;
      for (int x = x0; x < width; x += dx) {
        for (int c = 0; c < channels; ++c) {
          const uint16_t v = samples[(static_cast<size_t>(y) * width + x) * channels + c];
          if (depth == 16) row.push_back(static_cast<uint8_t>(v >> 8));
          row.push_back(static_cast<uint8_t>(v));
        }
      }
      if (row.empty()) break;
      AppendFiltered(filtered, row, prior, y_in_pass, bpp);
      prior = row;
    }
  }
  std::vector<uint8_t> idat(compressBound(static_cast<uLong>(filtered.size())));
  uLongf idat_size = idat.size();
  if (compress(idat.data(), &idat_size, filtered.data(), filtered.size()) != Z_OK) {
    throw std::runtime_error("zlib compress failed");
  }
  idat.resize(idat_size);
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> ihdr;
  Append32(ihdr, static_cast<uint32_t>(width));
  Append32(ihdr, static_cast<uint32_t>(height));
  ihdr.insert(ihdr.end(), {uint8_t(depth), uint8_t(color_type), 0, 0, uint8_t(interlaced)});
  AppendChunk(out, "IHDR", ihdr);
  if (color_type == 3) {
    std::vector<uint8_t> palette;
    for (int i = 0; i < 256; ++i) palette.insert(palette.end(), {uint8_t(i), uint8_t(255 - i), 7});
    AppendChunk(out, "PLTE", palette);
  }
  // The image data in two IDAT chunks, as encoders may split it.
  const size_t half = idat.size() / 2;
  AppendChunk(out, "IDAT", std::vector<uint8_t>(idat.begin(), idat.begin() + half));
  AppendChunk(out, "IDAT", std::vector<uint8_t>(idat.begin() + half, idat.end()));
  AppendChunk(out, "IEND", {});
  return out;
}

// The RGB that DecodePng should give for `samples`.
Image ExpectedRgb(const std::vector<uint16_t>& samples, int height, int width, int color_type,
                  int depth) {
  Image image = Image::Zeros(height, width, 3);
  const int channels = color_type == 0 || color_type == 3 ? 1
                       : color_type == 4                  ? 2
                       : color_type == 2                  ? 3
                                                          : 4;
  for (int i = 0; i < height * width; ++i) {
    const uint16_t* s = &samples[static_cast<size_t>(i) * channels];
    auto level = [&](int c) { return static_cast<uint8_t>(depth == 16 ? s[c] >> 8 : s[c]); };
    uint8_t* p = &image.pixels[static_cast<size_t>(i) * 3];
    if (color_type == 3) {
      p[0] = level(0), p[1] = static_cast<uint8_t>(255 - level(0)), p[2] = 7;
    } else if (channels <= 2) {
      p[0] = p[1] = p[2] = level(0);
    } else {
      p[0] = level(0), p[1] = level(1), p[2] = level(2);
    }
  }
  return image;
}

TEST(VisionPngDecodeTest, ColorTypesDepthsAndInterlacing) {
  struct Case {
    int color_type, channels, depth;
  };
  // Color types: 0 gray, 2 RGB, 3 palette, 4 gray + alpha, 6 RGBA.
  for (const Case& c : {Case{2, 3, 8}, Case{2, 3, 16}, Case{6, 4, 8}, Case{6, 4, 16},
                        Case{0, 1, 8}, Case{0, 1, 16}, Case{4, 2, 8}, Case{4, 2, 16},
                        Case{3, 1, 8}}) {
    for (bool interlaced : {false, true}) {
      for (auto [h, w] : {std::pair{1, 1}, std::pair{13, 29}}) {
        SCOPED_TRACE(::testing::Message() << "color type " << c.color_type << ", depth "
                                          << c.depth << ", interlaced " << interlaced << ", "
                                          << h << "x" << w);
        const auto samples = Pattern(h, w, c.channels, c.depth == 16 ? 65535 : 255);
        const auto png = EncodePng(samples, h, w, c.color_type, c.depth, interlaced);
        const Image out = DecodePng(png);
        const Image want = ExpectedRgb(samples, h, w, c.color_type, c.depth);
        EXPECT_EQ(out.height, h);
        EXPECT_EQ(out.width, w);
        EXPECT_EQ(out.pixels, want.pixels);
      }
    }
  }
}

TEST(VisionPngDecodeTest, TruncatedAndGarbageThrow) {
  const auto samples = Pattern(40, 50, 3, 255);
  const auto png = EncodePng(samples, 40, 50, 2, 8, false);
  const std::vector<uint8_t> cut(png.begin(), png.begin() + png.size() / 2);
  EXPECT_THROW(DecodePng(cut), CorruptImageError);
  EXPECT_THROW(DecodePng(std::vector<uint8_t>(png.begin(), png.begin() + 20)), CorruptImageError);
  EXPECT_THROW(DecodePng(std::vector<uint8_t>(100, 0)), CorruptImageError);
  EXPECT_THROW(DecodePng(std::vector<uint8_t>{}), CorruptImageError);
  std::vector<uint8_t> bad_crc = png;
  bad_crc[30] ^= 1;  // inside IHDR
  try {
    DecodePng(bad_crc);
    FAIL() << "no error";
  } catch (const CorruptImageError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt PNG image"), std::string::npos) << e.what();
  }
}

TEST(VisionWebpDecodeTest, LosslessRoundTripsAndDamageThrows) {
  const int h = 17, w = 23;
  std::vector<uint8_t> rgb(h * w * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 31 % 251);
  uint8_t* encoded = nullptr;
  const size_t size = WebPEncodeLosslessRGB(rgb.data(), w, h, w * 3, &encoded);
  ASSERT_GT(size, 0u);
  const std::vector<uint8_t> webp(encoded, encoded + size);
  WebPFree(encoded);
  const Image out = DecodeWebp(webp);
  EXPECT_EQ(out.height, h);
  EXPECT_EQ(out.width, w);
  EXPECT_EQ(out.pixels, rgb);
  EXPECT_THROW(DecodeWebp(std::vector<uint8_t>(webp.begin(), webp.end() - 10)),
               CorruptImageError);
  EXPECT_THROW(DecodeWebp(std::vector<uint8_t>(12, 0)), CorruptImageError);
}

// A JPEG with an APP1 Exif segment holding `tiff`, spliced in after SOI.
std::vector<uint8_t> WithExif(const std::vector<uint8_t>& jpeg, const std::vector<uint8_t>& tiff) {
  std::vector<uint8_t> segment = {'E', 'x', 'i', 'f', 0, 0};
  segment.insert(segment.end(), tiff.begin(), tiff.end());
  const size_t length = segment.size() + 2;
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);
  out.insert(out.end(), {0xFF, 0xE1, static_cast<uint8_t>(length >> 8),
                         static_cast<uint8_t>(length & 0xFF)});
  out.insert(out.end(), segment.begin(), segment.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

// A TIFF header and IFD0 with one entry: tag, type, count, value (SHORT in the first 2 bytes).
std::vector<uint8_t> Tiff(bool big_endian, uint16_t tag, uint16_t type, uint32_t count,
                          uint32_t value) {
  std::vector<uint8_t> out;
  auto u16 = [&](uint32_t v) {
    if (big_endian) out.insert(out.end(), {uint8_t(v >> 8), uint8_t(v)});
    else out.insert(out.end(), {uint8_t(v), uint8_t(v >> 8)});
  };
  auto u32 = [&](uint32_t v) {
    if (big_endian) u16(v >> 16), u16(v & 0xFFFF);
    else u16(v & 0xFFFF), u16(v >> 16);
  };
  out.insert(out.end(), big_endian ? std::initializer_list<uint8_t>{'M', 'M'}
                                   : std::initializer_list<uint8_t>{'I', 'I'});
  u16(42), u32(8), u16(1), u16(tag), u16(type), u32(count);
  if (type == 3) u16(value), u16(0);
  else u32(value);
  u32(0);  // no next IFD
  return out;
}

TEST(VisionExifTest, OrientationInBothByteOrdersAndDamageReadsAsOne) {
  const auto jpeg = testing::Fixture("rgb_420.jpg");
  EXPECT_EQ(JpegExifOrientation(jpeg), 1);
  for (bool big : {false, true}) {
    for (uint32_t o = 1; o <= 8; ++o) {
      EXPECT_EQ(JpegExifOrientation(WithExif(jpeg, Tiff(big, 0x0112, 3, 1, o))),
                static_cast<int>(o));
    }
    EXPECT_EQ(JpegExifOrientation(WithExif(jpeg, Tiff(big, 0x0112, 4, 1, 6))), 6);  // LONG
    EXPECT_EQ(JpegExifOrientation(WithExif(jpeg, Tiff(big, 0x0112, 3, 1, 9))), 1);  // not 1..8
    EXPECT_EQ(JpegExifOrientation(WithExif(jpeg, Tiff(big, 0x0112, 3, 2, 6))), 1);  // 2 values
    EXPECT_EQ(JpegExifOrientation(WithExif(jpeg, Tiff(big, 0x0110, 3, 1, 6))), 1);  // other tag
    auto cut = Tiff(big, 0x0112, 3, 1, 6);
    cut.resize(12);  // the entry is cut off
    EXPECT_EQ(JpegExifOrientation(WithExif(jpeg, cut)), 1);
  }
  // XMP's tiff:Orientation where the EXIF has none (Pillow's getexif()); EXIF's wins.
  auto with_xmp = [&](const std::string& packet, const std::vector<uint8_t>& base) {
    std::vector<uint8_t> body(packet.begin(), packet.end());
    const std::string ns("http://ns.adobe.com/xap/1.0/\0", 29);
    body.insert(body.begin(), ns.begin(), ns.end());
    std::vector<uint8_t> out(base.begin(), base.begin() + 2);
    const size_t length = body.size() + 2;
    out.insert(out.end(), {0xFF, 0xE1, uint8_t(length >> 8), uint8_t(length & 0xFF)});
    out.insert(out.end(), body.begin(), body.end());
    out.insert(out.end(), base.begin() + 2, base.end());
    return out;
  };
  EXPECT_EQ(JpegExifOrientation(with_xmp("<x tiff:Orientation=\"6\"/>", jpeg)), 6);
  EXPECT_EQ(JpegExifOrientation(with_xmp("<tiff:Orientation>8</tiff:Orientation>", jpeg)), 8);
  EXPECT_EQ(JpegExifOrientation(with_xmp("<tiff:Orientation>9</tiff:Orientation>", jpeg)), 1);
  EXPECT_EQ(JpegExifOrientation(with_xmp("tiff:Orientation", jpeg)), 1);
  const auto exif3 = WithExif(jpeg, Tiff(false, 0x0112, 3, 1, 3));
  EXPECT_EQ(JpegExifOrientation(with_xmp("<x tiff:Orientation=\"6\"/>", exif3)), 3);
  const auto other_tag = WithExif(jpeg, Tiff(false, 0x0110, 3, 1, 3));
  EXPECT_EQ(JpegExifOrientation(with_xmp("<x tiff:Orientation=\"6\"/>", other_tag)), 6);
  EXPECT_EQ(JpegExifOrientation(std::vector<uint8_t>{0xFF, 0xD8, 0xFF, 0xE1, 0xFF}), 1);
  EXPECT_EQ(JpegExifOrientation(std::vector<uint8_t>{}), 1);
  // The decode is unchanged by the EXIF segment.
  EXPECT_EQ(DecodeJpeg(WithExif(jpeg, Tiff(false, 0x0112, 3, 1, 6))).pixels,
            DecodeJpeg(jpeg).pixels);
}

TEST(VisionExifTest, ApplyExifOrientationAsPillowsTransposes) {
  // A 2 x 3 single-channel image: rows {1, 2, 3}, {4, 5, 6}.
  Image image = Image::Zeros(2, 3, 1);
  image.pixels = {1, 2, 3, 4, 5, 6};
  const std::vector<std::vector<uint8_t>> want = {
      {1, 2, 3, 4, 5, 6},  // 1
      {3, 2, 1, 6, 5, 4},  // 2 mirrored
      {6, 5, 4, 3, 2, 1},  // 3 rotated 180
      {4, 5, 6, 1, 2, 3},  // 4 flipped top to bottom
      {1, 4, 2, 5, 3, 6},  // 5 transposed (3 x 2)
      {4, 1, 5, 2, 6, 3},  // 6 rotated 90 clockwise
      {6, 3, 5, 2, 4, 1},  // 7 transversed
      {3, 6, 2, 5, 1, 4},  // 8 rotated 90 counter-clockwise
  };
  for (int o = 1; o <= 8; ++o) {
    const Image out = ApplyExifOrientation(image, o);
    EXPECT_EQ(out.height, o >= 5 ? 3 : 2) << o;
    EXPECT_EQ(out.pixels, want[o - 1]) << o;
  }
  EXPECT_THROW(ApplyExifOrientation(image, 0), std::invalid_argument);
  EXPECT_THROW(ApplyExifOrientation(image, 9), std::invalid_argument);
}

}  // namespace
}  // namespace spelt::vision
