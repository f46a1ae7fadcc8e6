// spelt::vision::Image (spelt/vision.h).
#include <stdexcept>
#include <string>

#include "spelt/vision.h"

namespace spelt::vision {

Image Image::Zeros(int height, int width, int channels) {
  if (height < 0 || width < 0 || channels < 1 || channels > 4) {
    throw std::invalid_argument("Image: bad shape " + std::to_string(height) + "x" +
                                std::to_string(width) + "x" + std::to_string(channels));
  }
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  image.pixels.assign(static_cast<size_t>(height) * width * channels, 0);
  return image;
}

}  // namespace spelt::vision
