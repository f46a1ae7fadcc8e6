// FlipHorizontal (spelt/vision.h).
#include <algorithm>
#include <utility>

#include "spelt/vision.h"

namespace spelt::vision {

Image FlipHorizontal(Image image) {
  const int c = image.channels;
  for (int y = 0; y < image.height; ++y) {
    uint8_t* left = image.row(y);
    uint8_t* right = left + static_cast<size_t>(image.width - 1) * c;
    for (; left < right; left += c, right -= c) std::swap_ranges(left, left + c, right);
  }
  return image;
}

}  // namespace spelt::vision
