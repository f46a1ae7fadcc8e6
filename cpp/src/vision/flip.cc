// FlipHorizontal (spelt/vision.h).
#include <algorithm>

#include "spelt/vision.h"

namespace spelt::vision {

Image FlipHorizontal(const Image& image) {
  Image out = Image::Zeros(image.height, image.width, image.channels);
  const int c = image.channels;
  for (int y = 0; y < image.height; ++y) {
    const uint8_t* src = image.row(y);
    uint8_t* dst = out.row(y) + static_cast<size_t>(image.width) * c;
    for (int x = 0; x < image.width; ++x) {
      dst -= c;
      std::copy_n(src + static_cast<size_t>(x) * c, c, dst);
    }
  }
  return out;
}

}  // namespace spelt::vision
