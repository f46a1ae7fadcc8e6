// Tests of ResizeBilinearAntialias (against Pillow 13's Image.resize(..., BILINEAR): fixtures
// written by cpp/tests/data/vision/make_fixtures.py), ResizeNearest and FlipHorizontal
// (spelt/vision.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "spelt/vision.h"
#include "vision/resize.h"
#include "vision_test_util.h"

namespace spelt::vision {
namespace {

using testing::Fixture;

// make_fixtures.py's pattern(): (x * 37 + y * 91 + c * 53 + ((x * y) % 29) * 5) & 255.
Image Pattern(int height, int width, int channels) {
  Image image = Image::Zeros(height, width, channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        image.row(y)[x * channels + c] =
            static_cast<uint8_t>((x * 37 + y * 91 + c * 53 + ((x * y) % 29) * 5) & 255);
      }
    }
  }
  return image;
}

Image FromFixture(const std::string& name, int height, int width, int channels) {
  Image image = Image::Zeros(height, width, channels);
  image.pixels = Fixture(name);
  EXPECT_EQ(image.pixels.size(), static_cast<size_t>(height) * width * channels) << name;
  return image;
}

struct ResizeCase {
  int in_h, in_w, channels, out_h, out_w;
};

TEST(VisionResizeTest, EqualsPillowBilinear) {
  const ResizeCase kCases[] = {
      {29, 41, 3, 7, 10},   // down in both
      {29, 41, 3, 60, 17},  // up, down
      {29, 41, 3, 29, 13},  // horizontal only
      {29, 41, 3, 5, 41},   // vertical only
      {29, 41, 3, 40, 55},  // up in both
      {29, 41, 1, 11, 11},  // grayscale
      {1, 1, 3, 3, 2},      // 1x1
  };
  for (const ResizeCase& c : kCases) {
    const std::string name = "resize_" + std::to_string(c.in_h) + "x" + std::to_string(c.in_w) +
                             "x" + std::to_string(c.channels) + "_to_" + std::to_string(c.out_h) +
                             "x" + std::to_string(c.out_w) + ".raw";
    const Image expected = FromFixture(name, c.out_h, c.out_w, c.channels);
    const Image got =
        ResizeBilinearAntialias(Pattern(c.in_h, c.in_w, c.channels), c.out_h, c.out_w);
    ASSERT_EQ(got.height, c.out_h);
    ASSERT_EQ(got.width, c.out_w);
    ASSERT_EQ(got.channels, c.channels);
    EXPECT_LE(testing::MaxAbsDiff(got, expected), 1) << name;
    EXPECT_EQ(got.pixels, expected.pixels) << name;  // in fact bit-exact
  }
}

TEST(VisionResizeTest, BoxEqualsPillowBox) {
  const Image expected = FromFixture("resize_29x41x3_to_9x12_box.raw", 9, 12, 3);
  const Image got = ResizeBilinearAntialiasBox(Pattern(29, 41, 3), 2.5, 1.25, 30.75, 20.5, 9, 12);
  EXPECT_EQ(got.pixels, expected.pixels);
}

TEST(VisionResizeTest, SameSizeIsACopy) {
  const Image in = Pattern(5, 7, 3);
  EXPECT_EQ(ResizeBilinearAntialias(in, 5, 7).pixels, in.pixels);
}

TEST(VisionResizeTest, EqualsPillowOnPhotographs) {
  for (const char* name : {"china.jpg", "flower.jpg"}) {
    const auto photo = testing::Photo(name);
    if (!photo) GTEST_SKIP() << "no " << name << " (set SPELT_TEST_PHOTOS_DIR)";
    const Image image = DecodeJpeg(*photo);
    for (auto [h, w] : {std::pair{224, 224}, std::pair{200, 300}, std::pair{213, 320}}) {
      const std::string what = "resize_" + std::to_string(h) + "x" + std::to_string(w);
      const auto golden = testing::Golden(name, what);
      ASSERT_TRUE(golden.has_value()) << name << " " << what;
      EXPECT_EQ(testing::Fnv1a64(ResizeBilinearAntialias(image, h, w).pixels), *golden)
          << name << " " << what;
    }
  }
}

TEST(VisionResizeTest, RejectsBadSizes) {
  const Image in = Pattern(4, 4, 3);
  EXPECT_THROW(ResizeBilinearAntialias(in, 0, 3), std::invalid_argument);
  EXPECT_THROW(ResizeBilinearAntialias(Image{}, 3, 3), std::invalid_argument);
  EXPECT_THROW(ResizeBilinearAntialiasBox(in, 0, 0, 5, 4, 2, 2), std::invalid_argument);
  EXPECT_THROW(ResizeBilinearAntialiasBox(in, 2, 0, 2, 4, 2, 2), std::invalid_argument);
}

// Output pixel (y, x) of ResizeNearest(in, ...) must be in's (ys[y], xs[x]), every channel.
void ExpectNearest(const Image& in, const Image& out, const std::vector<int>& ys,
                   const std::vector<int>& xs) {
  ASSERT_EQ(out.height, static_cast<int>(ys.size()));
  ASSERT_EQ(out.width, static_cast<int>(xs.size()));
  for (size_t y = 0; y < ys.size(); ++y) {
    for (size_t x = 0; x < xs.size(); ++x) {
      for (int c = 0; c < in.channels; ++c) {
        EXPECT_EQ(out.row(y)[x * in.channels + c], in.row(ys[y])[xs[x] * in.channels + c])
            << y << "," << x << "," << c;
      }
    }
  }
}

TEST(VisionResizeTest, NearestTakesPillowsAccumulatedSourcePositions) {
  // 2 -> 7: Pillow's position of index 3 is 1/7 plus 2/7 added three times, just below 1.0, so
  // it takes pixel 0 (the product (3 + 0.5) * 2/7 is 1.0: pixel 1). tests/test_vision_native.py
  // compares with Pillow itself.
  const Image in = Pattern(2, 2, 1);
  ExpectNearest(in, ResizeNearest(in, 7, 7), {0, 0, 0, 0, 1, 1, 1}, {0, 0, 0, 0, 1, 1, 1});
  // 5 -> 3 and 3 -> 2 (reductions), RGBA kept as stored.
  const Image rgba = Pattern(3, 5, 4);
  ExpectNearest(rgba, ResizeNearest(rgba, 2, 3), {0, 2}, {0, 2, 4});
  EXPECT_EQ(ResizeNearest(rgba, 3, 5).pixels, rgba.pixels);  // same size: a copy
}

TEST(VisionResizeTest, NearestRejectsBadSizes) {
  EXPECT_THROW(ResizeNearest(Pattern(4, 4, 3), 0, 3), std::invalid_argument);
  EXPECT_THROW(ResizeNearest(Image{}, 3, 3), std::invalid_argument);
}

TEST(VisionFlipTest, MirrorsEachRow) {
  const Image in = Pattern(3, 5, 3);
  const Image out = FlipHorizontal(in);
  ASSERT_EQ(out.pixels.size(), in.pixels.size());
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 5; ++x) {
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(out.row(y)[x * 3 + c], in.row(y)[(4 - x) * 3 + c]);
      }
    }
  }
  EXPECT_EQ(FlipHorizontal(out).pixels, in.pixels);
  const Image one = Pattern(1, 1, 1);
  EXPECT_EQ(FlipHorizontal(one).pixels, one.pixels);
}

// The AVX2 horizontal pass (16-bit multiply-adds of split weights) against the portable sums
// (ResamplePixel) for random rows and filters: tap counts of 1 to 13, weights up to
// 2^kPrecisionBits (a single tap of weight 1 included), pixels near the row's end (the scalar
// fallback) and rows of one pixel.
TEST(VisionResizeTest, Avx2HorizontalPassEqualsPortableSums) {
  if (!internal::HasAvx2Resample()) GTEST_SKIP() << "this CPU has no AVX2";
  std::mt19937 gen(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int width = 1 + static_cast<int>(gen() % 40), height = 1 + static_cast<int>(gen() % 3);
    const int out_width = 1 + static_cast<int>(gen() % 30);
    internal::Coefficients c;
    c.ksize = 1 + static_cast<int>(gen() % 13);
    for (int x = 0; x < out_width; ++x) {
      const int count = 1 + static_cast<int>(gen() % std::min(c.ksize, width));
      c.first.push_back(static_cast<int>(gen() % (width - count + 1)));
      c.count.push_back(count);
      for (int t = 0; t < c.ksize; ++t) {
        const int32_t full = int32_t{1} << internal::kPrecisionBits;
        const int32_t k = count == 1 ? full : static_cast<int32_t>(gen() % (full / count + 1));
        c.kk.push_back(t < count ? k : 0);
      }
    }
    Image in = Image::Zeros(height, width, 3);
    for (uint8_t& v : in.pixels) v = static_cast<uint8_t>(gen() % 4 == 0 ? 255 : gen());
    const internal::ImageView view{in.pixels.data(), height, width, 3, in.row_bytes()};
    std::vector<uint8_t> got(static_cast<size_t>(height) * out_width * 3);
    internal::HorizontalRgbAvx2(view, 0, c, height, out_width, got.data(), out_width * 3);
    std::vector<uint8_t> want(got.size());
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < out_width; ++x) {
        internal::ResamplePixel<3>(in.row(y) + static_cast<size_t>(c.first[x]) * 3,
                                   &c.kk[static_cast<size_t>(x) * c.ksize], c.count[x],
                                   &want[(static_cast<size_t>(y) * out_width + x) * 3]);
      }
    }
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

}  // namespace
}  // namespace spelt::vision
