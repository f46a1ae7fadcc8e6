// DecodeWebp (spelt/vision.h): libwebp's decode of a still WebP (lossy, lossless, with or
// without alpha) to RGB. Pillow decodes WebP with libwebp too (through WebPAnimDecoder, whose
// first frame of a still image is WebPDecode's RGBA output) and drops the alpha for RGB, so the
// colour values are libwebp's own: equal to Pillow's for the same bytes.
#include <webp/decode.h>

#include <stdexcept>
#include <string>

#include "spelt/errors.h"
#include "spelt/vision.h"
#include "vision/decoded_size.h"

namespace spelt::vision {
namespace {

const char* StatusMessage(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "user abort";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "not enough data (truncated)";
    default:
      return "error";
  }
}

}  // namespace

Image DecodeWebp(std::span<const uint8_t> data) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(data.data(), data.size(), &features);
  if (status != VP8_STATUS_OK) throw CorruptImageError("WebP", data.size(), StatusMessage(status));
  if (features.has_animation) {
    throw std::invalid_argument("DecodeWebp: an animated WebP (" + std::to_string(data.size()) +
                                " bytes) is not decoded natively");
  }
  internal::CheckDecodedSize("WebP", data.size(), features.height, features.width);
  Image image = Image::Zeros(features.height, features.width, 3);
  if (WebPDecodeRGBInto(data.data(), data.size(), image.pixels.data(), image.pixels.size(),
                        static_cast<int>(image.row_bytes())) == nullptr) {
    throw CorruptImageError("WebP", data.size(), "truncated or corrupt image data");
  }
  return image;
}

}  // namespace spelt::vision
