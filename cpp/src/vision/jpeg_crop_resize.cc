// DecodeJpegCropResize (spelt/vision.h): RandomResizedCrop fused with the JPEG decode. Only
// the scaled rows and iMCU columns that cover the crop are decoded, at 1/1, 1/2, 1/4 or 1/8 of
// the size, and Pillow's resampling then runs on exactly the crop's pixels (the crop's box in
// scaled, fractional coordinates), so that without scaling the result is the unfused one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "spelt/vision.h"
#include "vision/jpeg_decompressor.h"
#include "vision/resize.h"

namespace spelt::vision {

namespace {

void CheckOutputSides(int out_height, int out_width) {
  if (out_height < 1 || out_width < 1) {
    throw std::invalid_argument("DecodeJpegCropResize: output of " + std::to_string(out_height) +
                                "x" + std::to_string(out_width) + " pixels");
  }
}

}  // namespace

int JpegScaleDenominator(int crop_height, int crop_width, int out_height, int out_width) {
  // Scale by 1/denom where the scaled crop is still at least 1.5x the output on both sides
  // (the crop at least 3 * denom / 2 times the output): the resize after the scaling then keeps
  // enough of its own antialiasing. With 1x (scaling as soon as the crop is twice the output)
  // the PSNR against the reference fell to 35.5 dB on china.jpg; with 1.5x its minimum over
  // 300 random crops was 40.7 dB (vision_jpeg_crop_resize_test.cc).
  for (int denom : {8, 4, 2}) {
    if (2 * static_cast<int64_t>(crop_height) >= 3 * static_cast<int64_t>(denom) * out_height &&
        2 * static_cast<int64_t>(crop_width) >= 3 * static_cast<int64_t>(denom) * out_width) {
      return denom;
    }
  }
  return 1;
}

Image DecodeJpegCropResize(std::span<const uint8_t> data, const CropBox& crop, int out_height,
                           int out_width, bool mirror) {
  CheckOutputSides(out_height, out_width);
  Image out = Image::Zeros(out_height, out_width, 3);
  DecodeJpegCropResizeInto(data, crop, out_height, out_width, mirror, out.pixels.data());
  return out;
}

void DecodeJpegCropResizeInto(std::span<const uint8_t> data, const CropBox& crop,
                              int out_height, int out_width, bool mirror, uint8_t* out) {
  CheckOutputSides(out_height, out_width);
  internal::JpegDecompressor decompressor(data);
  const JpegHeader header = decompressor.ReadHeader();
  if (crop.height < 1 || crop.width < 1 || crop.top < 0 || crop.left < 0 ||
      crop.top > header.height - crop.height || crop.left > header.width - crop.width) {
    throw std::invalid_argument(
        "DecodeJpegCropResize: crop (top " + std::to_string(crop.top) + ", left " +
        std::to_string(crop.left) + ", " + std::to_string(crop.height) + "x" +
        std::to_string(crop.width) + ") is empty or outside the " +
        std::to_string(header.height) + "x" + std::to_string(header.width) + " image");
  }
  const int denom = JpegScaleDenominator(crop.height, crop.width, out_height, out_width);
  decompressor.Start(denom);
  // The crop in the scaled image (pixel i of it covers source pixels [i * denom, (i + 1) *
  // denom)), and the whole scaled pixels that cover it.
  const double fx0 = static_cast<double>(crop.left) / denom;
  const double fy0 = static_cast<double>(crop.top) / denom;
  const double fx1 = static_cast<double>(crop.left + crop.width) / denom;
  const double fy1 = static_cast<double>(crop.top + crop.height) / denom;
  const int x0 = static_cast<int>(std::floor(fx0));
  const int y0 = static_cast<int>(std::floor(fy0));
  const int x1 = std::min(decompressor.output_width(), static_cast<int>(std::ceil(fx1)));
  const int y1 = std::min(decompressor.output_height(), static_cast<int>(std::ceil(fy1)));

  // libjpeg-turbo upsamples chroma at the edges of a cropped or skipped-to region from
  // replicated samples, so the region's outer pixels differ from a full decode: those within a
  // chroma sample or two of its edge. A guard of a quarter iMCU (4 pixels for 4:2:0: two
  // chroma samples) between the region's edges and the pixels used, where the image goes on,
  // keeps them out, and the pixels used equal the full decode's: the rows above are read and
  // dropped, the columns decoded and ignored. The region's edges are whole iMCUs (libjpeg
  // widens a crop to them), so the guard costs an iMCU only where the crop's edge lies within
  // the guard of one.
  const int guard_x = std::max(1, decompressor.imcu_width() / 4);
  const int guard_y = std::max(1, decompressor.imcu_height() / 4);
  int decoded_left = std::max(0, x0 - guard_x);
  int decoded_width = std::min(decompressor.output_width(), x1 + guard_x) - decoded_left;
  if (decoded_width < decompressor.output_width()) {
    decompressor.CropColumns(&decoded_left, &decoded_width);
  } else {
    decoded_left = 0;
  }
  const int imcu_rows = decompressor.imcu_height();
  const int first_row = std::max(0, (y0 - guard_y) / imcu_rows * imcu_rows);  // iMCU-aligned
  decompressor.SkipRows(first_row);
  // The decoded rows live in a per-thread buffer, reused from image to image.
  thread_local std::vector<uint8_t> rows;
  const size_t stride = static_cast<size_t>(decoded_width) * 3;
  if (rows.size() < stride * (y1 - first_row)) rows.resize(stride * (y1 - first_row));
  decompressor.ReadRows(y1 - first_row, rows.data(), stride);
  // The rows below the crop are never decoded; ~JpegDecompressor abandons the decompression.

  const internal::ImageView region{
      rows.data() + stride * (y0 - first_row) + static_cast<size_t>(x0 - decoded_left) * 3,
      y1 - y0, x1 - x0, 3, stride};
  internal::ResampleBilinearInto(region, fx0 - x0, fy0 - y0, fx1 - x0, fy1 - y0, out_height,
                                 out_width, mirror, out);
}

}  // namespace spelt::vision
