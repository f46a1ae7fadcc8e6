// ResizeNearest (spelt/vision.h): Pillow's Image.resize(..., NEAREST), after Pillow's
// src/_imaging.c (_resize: the affine scale a = in / out, offset 0) and
// libImaging/Geometry.c (ImagingScaleAffine): the source position of output column x is a
// double that starts at a / 2 and adds a once per column (so its rounding is Pillow's), and is
// truncated to an int; rows likewise. A position past the input (it cannot happen for a whole
// image, but Pillow checks) leaves the output pixel zero, as Pillow's fill does.
#include <cstring>
#include <vector>

#include "spelt/vision.h"
#include "vision/resize.h"

namespace spelt::vision {
namespace {

// For each of `out` positions, its input position, or -1 where it falls outside [0, in).
std::vector<int> SourcePositions(int in, int out) {
  // Pillow keeps the box in single-precision floats; whole sizes below 2^24 are exact there.
  const double a = static_cast<double>(static_cast<float>(in)) / out;
  std::vector<int> pos(out);
  double v = a * 0.5;
  for (int i = 0; i < out; ++i) {
    const int p = v < 0.0 ? -1 : static_cast<int>(v);  // Geometry.c's COORD
    pos[i] = p < in ? p : -1;
    v += a;
  }
  return pos;
}

}  // namespace

Image ResizeNearest(const Image& image, int out_height, int out_width) {
  internal::CheckResize("ResizeNearest", image, out_height, out_width);
  Image out = Image::Zeros(out_height, out_width, image.channels);
  if (out_height == image.height && out_width == image.width) {
    out.pixels = image.pixels;  // Pillow copies (ImagingCrop of the whole image)
    return out;
  }
  const std::vector<int> xs = SourcePositions(image.width, out_width);
  const std::vector<int> ys = SourcePositions(image.height, out_height);
  const size_t c = static_cast<size_t>(image.channels);
  for (int y = 0; y < out_height; ++y) {
    if (ys[y] < 0) continue;
    const uint8_t* src = image.row(ys[y]);
    uint8_t* dst = out.row(y);
    for (int x = 0; x < out_width; ++x) {
      if (xs[x] >= 0) std::memcpy(dst + x * c, src + xs[x] * c, c);
    }
  }
  return out;
}

}  // namespace spelt::vision
