// Tests of DecodeJpegCropResize (spelt/vision.h), the fused decode + crop + resize, against the
// unfused reference ResizeBilinearAntialias(crop of DecodeJpeg(...)): equal where no DCT
// scaling applies, a PSNR of at least 38 dB where it does (issue 23), on photo_like.jpg and on
// scikit-learn's photographs where present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "spelt/errors.h"
#include "spelt/random.h"
#include "spelt/vision.h"
#include "vision_test_util.h"

namespace spelt::vision {
namespace {

using testing::Fixture;

Image Reference(const std::vector<uint8_t>& jpeg, const CropBox& crop, int out_h, int out_w) {
  return ResizeBilinearAntialias(testing::Crop(DecodeJpeg(jpeg), crop), out_h, out_w);
}

TEST(VisionJpegCropResizeTest, ScaleDenominator) {
  EXPECT_EQ(JpegScaleDenominator(224, 224, 224, 224), 1);
  EXPECT_EQ(JpegScaleDenominator(671, 1000, 224, 224), 1);
  EXPECT_EQ(JpegScaleDenominator(672, 672, 224, 224), 2);
  EXPECT_EQ(JpegScaleDenominator(672, 671, 224, 224), 1);
  EXPECT_EQ(JpegScaleDenominator(1400, 2000, 224, 224), 4);
  EXPECT_EQ(JpegScaleDenominator(2688, 2688, 224, 224), 8);
  EXPECT_EQ(JpegScaleDenominator(5000, 5000, 224, 224), 8);
  EXPECT_EQ(JpegScaleDenominator(12, 12, 1, 1), 8);
  EXPECT_EQ(JpegScaleDenominator(11, 12, 1, 1), 4);
}

TEST(VisionJpegCropResizeTest, WithoutScalingEqualsTheReference) {
  for (const char* name : {"rgb_420.jpg", "rgb_444.jpg", "gray.jpg", "cmyk.jpg",
                           "progressive.jpg", "photo_like.jpg"}) {
    const std::vector<uint8_t> jpeg = Fixture(name);
    const JpegHeader h = ReadJpegHeader(jpeg);
    const CropBox crops[] = {
        {0, 0, h.height, h.width},
        {h.height / 3, h.width / 4, h.height / 2, h.width / 2},
        {h.height - h.height / 3, h.width - h.width / 3, h.height / 3, h.width / 3},
        {1, 3, 1, 1},
    };
    for (const CropBox& crop : crops) {
      for (auto [oh, ow] : {std::pair{crop.height, crop.width}, std::pair{7, 9},
                            std::pair{crop.height + 5, std::max(1, crop.width - 1)}}) {
        if (JpegScaleDenominator(crop.height, crop.width, oh, ow) != 1) continue;
        const Image fused = DecodeJpegCropResize(jpeg, crop, oh, ow);
        EXPECT_EQ(fused.pixels, Reference(jpeg, crop, oh, ow).pixels)
            << name << " crop " << crop.top << "," << crop.left << "," << crop.height << ","
            << crop.width << " to " << oh << "x" << ow;
      }
    }
  }
}

// Crop edges at every offset around the iMCU boundaries (16 and 32 pixels for 4:2:0), where
// the decoded region's replicated chroma comes closest to the pixels used: the fused decode of
// the crop equals the reference's pixels.
TEST(VisionJpegCropResizeTest, EdgesNearIMcuBoundariesEqualTheReference) {
  for (const char* name : {"rgb_420.jpg", "rgb_444.jpg", "progressive.jpg"}) {
    const std::vector<uint8_t> jpeg = Fixture(name);
    const JpegHeader h = ReadJpegHeader(jpeg);
    for (int top = 12; top <= 36 && top + 10 <= h.height; ++top) {
      for (int left = 12; left <= 36 && left + 13 <= h.width; ++left) {
        for (const CropBox crop : {CropBox{top, left, 10, 13}, CropBox{0, 0, top, left}}) {
          EXPECT_EQ(DecodeJpegCropResize(jpeg, crop, crop.height, crop.width).pixels,
                    Reference(jpeg, crop, crop.height, crop.width).pixels)
              << name << " crop " << crop.top << "," << crop.left << "," << crop.height << ","
              << crop.width;
        }
      }
    }
  }
}

TEST(VisionJpegCropResizeTest, MirrorEqualsFlippingTheOutput) {
  for (const char* name : {"rgb_420.jpg", "gray.jpg", "photo_like.jpg"}) {
    const std::vector<uint8_t> jpeg = Fixture(name);
    const JpegHeader h = ReadJpegHeader(jpeg);
    for (const CropBox crop : {CropBox{0, 0, h.height, h.width}, CropBox{2, 5, h.height / 2, 17}}) {
      // Sizes that need a horizontal pass, and one (the crop's own) that would not.
      for (auto [oh, ow] : {std::pair{9, 11}, std::pair{crop.height, crop.width}}) {
        EXPECT_EQ(DecodeJpegCropResize(jpeg, crop, oh, ow, /*mirror=*/true).pixels,
                  FlipHorizontal(DecodeJpegCropResize(jpeg, crop, oh, ow)).pixels)
            << name << " to " << oh << "x" << ow;
      }
    }
  }
}

TEST(VisionJpegCropResizeTest, OnePixel) {
  const std::vector<uint8_t> jpeg = Fixture("one_pixel.jpg");
  const Image out = DecodeJpegCropResize(jpeg, {0, 0, 1, 1}, 2, 3);
  EXPECT_EQ(out.pixels, Reference(jpeg, {0, 0, 1, 1}, 2, 3).pixels);
}

// Random crops of the train recipe (RandomResizedCrop(224) draws), fused against the
// reference: min and mean PSNR over them; and the count of each DCT scale used.
void CheckPsnr(const std::string& label, const std::vector<uint8_t>& jpeg, int out, int crops,
               double min_psnr) {
  const JpegHeader header = ReadJpegHeader(jpeg);
  const Image full = DecodeJpeg(jpeg);
  double worst = std::numeric_limits<double>::infinity();
  double sum = 0;
  int finite = 0;
  int scaled[9] = {};
  for (int i = 0; i < crops; ++i) {
    Philox philox({static_cast<uint64_t>(i), 7}, {0, 0, 0, 0});
    PhiloxCropDraws draws(philox);
    const CropBox crop =
        RandomResizedCropParams(header.height, header.width, {0.08, 1.0}, {0.75, 4.0 / 3}, draws);
    const Image fused = DecodeJpegCropResize(jpeg, crop, out, out);
    const Image reference = ResizeBilinearAntialias(testing::Crop(full, crop), out, out);
    const double psnr = testing::Psnr(fused, reference);
    const int denom = JpegScaleDenominator(crop.height, crop.width, out, out);
    ++scaled[denom];
    EXPECT_GE(psnr, min_psnr) << label << " crop " << crop.top << "," << crop.left << ","
                              << crop.height << "," << crop.width << " scale 1/" << denom;
    worst = std::min(worst, psnr);
    if (psnr != std::numeric_limits<double>::infinity()) {
      sum += psnr;
      ++finite;
    }
  }
  std::printf("[ PSNR     ] %s -> %dx%d, %d crops (1/1: %d, 1/2: %d, 1/4: %d, 1/8: %d): "
              "min %.2f dB, mean of the inexact %.2f dB\n",
              label.c_str(), out, out, crops, scaled[1], scaled[2], scaled[4], scaled[8], worst,
              finite ? sum / finite : 0.0);
}

TEST(VisionJpegCropResizeTest, PsnrOnPhotoLike) {
  const std::vector<uint8_t> jpeg = Fixture("photo_like.jpg");
  CheckPsnr("photo_like.jpg", jpeg, 64, 40, 38.0);
  CheckPsnr("photo_like.jpg", jpeg, 32, 40, 38.0);
}

TEST(VisionJpegCropResizeTest, PsnrOnPhotographs) {
  for (const char* name : {"china.jpg", "flower.jpg"}) {
    const auto photo = testing::Photo(name);
    if (!photo) GTEST_SKIP() << "no " << name << " (set SPELT_TEST_PHOTOS_DIR)";
    CheckPsnr(name, *photo, 224, 40, 38.0);
    CheckPsnr(name, *photo, 100, 100, 38.0);
    CheckPsnr(name, *photo, 64, 100, 38.0);
    CheckPsnr(name, *photo, 32, 100, 38.0);
  }
}

TEST(VisionJpegCropResizeTest, RejectsBadCrops) {
  const std::vector<uint8_t> jpeg = Fixture("rgb_420.jpg");  // 45 x 61
  EXPECT_THROW(DecodeJpegCropResize(jpeg, {0, 0, 0, 5}, 4, 4), std::invalid_argument);
  EXPECT_THROW(DecodeJpegCropResize(jpeg, {-1, 0, 5, 5}, 4, 4), std::invalid_argument);
  EXPECT_THROW(DecodeJpegCropResize(jpeg, {41, 0, 5, 5}, 4, 4), std::invalid_argument);
  EXPECT_THROW(DecodeJpegCropResize(jpeg, {0, 57, 5, 5}, 4, 4), std::invalid_argument);
  EXPECT_THROW(DecodeJpegCropResize(jpeg, {0, 0, 5, 5}, 0, 4), std::invalid_argument);
  EXPECT_NO_THROW(DecodeJpegCropResize(jpeg, {40, 56, 5, 5}, 4, 4));
}

TEST(VisionJpegCropResizeTest, TruncatedThrows) {
  const std::vector<uint8_t> jpeg = Fixture("photo_like.jpg");
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(jpeg.size() / 2));
  // The bottom of the image is missing: a crop there fails; the header alone fails early.
  EXPECT_THROW(DecodeJpegCropResize(cut, {200, 0, 40, 320}, 20, 20), CorruptImageError);
  const std::vector<uint8_t> header_only(jpeg.begin(), jpeg.begin() + 50);
  EXPECT_THROW(DecodeJpegCropResize(header_only, {0, 0, 10, 10}, 5, 5), CorruptImageError);
}

}  // namespace
}  // namespace spelt::vision
