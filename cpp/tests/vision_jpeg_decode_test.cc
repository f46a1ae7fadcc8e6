// Tests of ReadJpegHeader and DecodeJpeg (spelt/vision.h): the pixels equal Pillow 13's decode
// (np.asarray(Image.open(f).convert("RGB")), fixtures of cpp/tests/data/vision/make_fixtures.py)
// for RGB 4:2:0 and 4:4:4, grayscale, CMYK, progressive and 1x1 JPEGs and for real photographs;
// truncated and corrupt input throws CorruptImageError with libjpeg's message.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "spelt/errors.h"
#include "spelt/vision.h"
#include "vision_test_util.h"

namespace spelt::vision {
namespace {

using testing::Fixture;

struct DecodeCase {
  const char* name;
  int height;
  int width;
  int components;
  bool progressive;
};

TEST(VisionJpegDecodeTest, EqualsPillow) {
  const DecodeCase kCases[] = {
      {"rgb_420", 45, 61, 3, false}, {"rgb_444", 21, 33, 3, false},
      {"gray", 17, 23, 1, false},    {"cmyk", 13, 19, 4, false},
      {"progressive", 45, 61, 3, true}, {"one_pixel", 1, 1, 3, false},
  };
  for (const DecodeCase& c : kCases) {
    const std::vector<uint8_t> jpeg = Fixture(std::string(c.name) + ".jpg");
    const JpegHeader header = ReadJpegHeader(jpeg);
    EXPECT_EQ(header.height, c.height) << c.name;
    EXPECT_EQ(header.width, c.width) << c.name;
    EXPECT_EQ(header.components, c.components) << c.name;
    EXPECT_EQ(header.progressive, c.progressive) << c.name;
    const Image image = DecodeJpeg(jpeg);
    EXPECT_EQ(image.height, c.height) << c.name;
    EXPECT_EQ(image.width, c.width) << c.name;
    EXPECT_EQ(image.channels, 3) << c.name;
    EXPECT_EQ(image.pixels, Fixture(std::string(c.name) + ".rgb")) << c.name;
  }
}

TEST(VisionJpegDecodeTest, GrayscaleRepeatsTheLevel) {
  const Image image = DecodeJpeg(Fixture("gray.jpg"));
  for (size_t i = 0; i < image.pixels.size(); i += 3) {
    ASSERT_EQ(image.pixels[i], image.pixels[i + 1]);
    ASSERT_EQ(image.pixels[i], image.pixels[i + 2]);
  }
}

TEST(VisionJpegDecodeTest, EqualsPillowOnPhotographs) {
  for (const char* name : {"china.jpg", "flower.jpg"}) {
    const auto photo = testing::Photo(name);
    if (!photo) GTEST_SKIP() << "no " << name << " (set SPELT_TEST_PHOTOS_DIR)";
    const Image image = DecodeJpeg(*photo);
    EXPECT_EQ(image.height, 427);
    EXPECT_EQ(image.width, 640);
    EXPECT_EQ(testing::Fnv1a64(image.pixels), testing::Golden(name, "decode").value()) << name;
  }
}

TEST(VisionJpegDecodeTest, TruncatedThrowsWithLibjpegMessage) {
  const std::vector<uint8_t> jpeg = Fixture("rgb_420.jpg");
  for (size_t keep : {jpeg.size() - 3, jpeg.size() / 2, size_t{300}, size_t{20}, size_t{2}}) {
    const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(keep));
    try {
      DecodeJpeg(cut);
      ADD_FAILURE() << "no error for " << keep << " of " << jpeg.size() << " bytes";
    } catch (const CorruptImageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("corrupt JPEG image (" + std::to_string(keep) + " bytes)"),
                std::string::npos)
          << what;
      EXPECT_FALSE(e.detail().empty());
      if (keep > 300) EXPECT_EQ(e.detail(), "Premature end of JPEG file") << what;
    }
  }
}

TEST(VisionJpegDecodeTest, MissingEndMarkerIsAccepted) {
  // As Pillow: every pixel is there, only the EOI marker (the last 2 bytes) is missing.
  const std::vector<uint8_t> jpeg = Fixture("rgb_420.jpg");
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.end() - 2);
  EXPECT_EQ(DecodeJpeg(cut).pixels, Fixture("rgb_420.rgb"));
}

TEST(VisionJpegDecodeTest, ProgressiveTruncatedThrows) {
  const std::vector<uint8_t> jpeg = Fixture("progressive.jpg");
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(jpeg.size() * 2 / 3));
  EXPECT_THROW(DecodeJpeg(cut), CorruptImageError);
}

TEST(VisionJpegDecodeTest, NotAJpegThrows) {
  const std::vector<uint8_t> empty;
  EXPECT_THROW(DecodeJpeg(empty), CorruptImageError);
  EXPECT_THROW(ReadJpegHeader(empty), CorruptImageError);
  const std::string png = "\x89PNG\r\n\x1a\n0000000000000000";
  try {
    DecodeJpeg(std::span(reinterpret_cast<const uint8_t*>(png.data()), png.size()));
    ADD_FAILURE() << "no error";
  } catch (const CorruptImageError& e) {
    EXPECT_NE(std::string(e.what()).find("Not a JPEG file"), std::string::npos) << e.what();
  }
}

TEST(VisionJpegDecodeTest, CorruptHeaderThrows) {
  std::vector<uint8_t> jpeg = Fixture("rgb_420.jpg");
  // Break every SOF0 marker's precision byte (8 -> 7 bits): libjpeg rejects the header.
  bool found = false;
  for (size_t i = 0; i + 4 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 4] = 7;
      found = true;
      break;
    }
  }
  ASSERT_TRUE(found);
  EXPECT_THROW(DecodeJpeg(jpeg), CorruptImageError);
}

TEST(VisionJpegDecodeTest, GarbageNeverCrashes) {
  // Flipped bytes in the entropy-coded data: an error or (wrong) pixels, never a crash.
  const std::vector<uint8_t> jpeg = Fixture("progressive.jpg");
  for (size_t pos = 200; pos < jpeg.size(); pos += 97) {
    std::vector<uint8_t> bad = jpeg;
    bad[pos] ^= 0x5A;
    try {
      const Image image = DecodeJpeg(bad);
      EXPECT_EQ(image.pixels.size(), static_cast<size_t>(image.height) * image.width * 3);
    } catch (const CorruptImageError&) {
    }
  }
}

TEST(VisionJpegDecodeTest, ThreadsDecodeAtOnce) {
  const std::vector<uint8_t> jpeg = Fixture("rgb_420.jpg");
  const std::vector<uint8_t> expected = Fixture("rgb_420.rgb");
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + 500);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        ok[t] += DecodeJpeg(jpeg).pixels == expected;
        try {
          DecodeJpeg(cut);
        } catch (const CorruptImageError&) {
          ok[t] += 1;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 100);
}

}  // namespace
}  // namespace spelt::vision
