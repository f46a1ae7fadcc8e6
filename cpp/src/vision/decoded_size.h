// CheckDecodedSize: the decoders' guard against headers that claim a huge image.
#ifndef SPELT_VISION_DECODED_SIZE_H_
#define SPELT_VISION_DECODED_SIZE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "spelt/errors.h"

namespace spelt::vision::internal {

// Decoded images above this many bytes (height x width x 3) are refused: 2**31, as
// python/spelt/vision/resize.py's MAX_OUTPUT_BYTES (Pillow's own guard, MAX_IMAGE_PIXELS,
// refuses smaller images already, so the reference decoder then raises Pillow's error).
constexpr int64_t kMaxDecodedBytes = int64_t{1} << 31;

// Throws CorruptImageError(format, size, ...) if a height x width RGB image is above the limit.
inline void CheckDecodedSize(std::string_view format, size_t size, int64_t height,
                             int64_t width) {
  if (height * width * 3 > kMaxDecodedBytes) {
    throw CorruptImageError(format, size,
                            "an image of " + std::to_string(height) + "x" +
                                std::to_string(width) + " pixels is above the limit of 2**31 "
                                "decoded bytes");
  }
}

}  // namespace spelt::vision::internal

#endif  // SPELT_VISION_DECODED_SIZE_H_
