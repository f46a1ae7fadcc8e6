// ReadJpegHeader and DecodeJpeg (spelt/vision.h): the whole image, as Pillow decodes it.
#include "spelt/vision.h"
#include "vision/jpeg_decompressor.h"

namespace spelt::vision {

JpegHeader ReadJpegHeader(std::span<const uint8_t> data) {
  internal::JpegDecompressor decompressor(data);
  return decompressor.ReadHeader();
}

Image DecodeJpeg(std::span<const uint8_t> data) {
  internal::JpegDecompressor decompressor(data);
  decompressor.ReadHeader();
  decompressor.Start(1);
  Image image = Image::Zeros(decompressor.output_height(), decompressor.output_width(), 3);
  decompressor.ReadRows(image.height, image.pixels.data(), image.row_bytes());
  decompressor.Finish();
  return image;
}

}  // namespace spelt::vision
