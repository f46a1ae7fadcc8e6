// ResizeBilinearAntialias (spelt/vision.h): Pillow's Image.resize(..., BILINEAR), after
// Pillow's libImaging/Resample.c (precompute_coeffs, normalize_coeffs_8bpc,
// ImagingResampleHorizontal_8bpc / Vertical_8bpc, ImagingResampleInner): the same double
// coefficients, rounded to the same 22-bit fixed point, the horizontal pass first, so the output
// is Pillow 12's to the bit. Pillow 13 runs the vertical pass first for some shapes (each pass
// rounds to bytes), so its output can differ by 1 level in places.
#include "vision/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace spelt::vision {
namespace internal {
namespace {

constexpr double kBilinearSupport = 1.0;

double BilinearFilter(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

// precompute_coeffs + normalize_coeffs_8bpc.
Coefficients Precompute(int in_size, double in0, double in1, int out_size) {
  const double scale = (in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = kBilinearSupport * filterscale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.kk.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> k(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    double ww = 0.0;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    for (int x = 0; x < xmax; ++x) {
      const double w = BilinearFilter((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    int32_t* out = &c.kk[static_cast<size_t>(xx) * c.ksize];
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? k[x] / ww : k[x];
      out[x] = v < 0 ? static_cast<int32_t>(-0.5 + v * (1 << kPrecisionBits))
                     : static_cast<int32_t>(0.5 + v * (1 << kPrecisionBits));
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

// Rows [row0, row0 + out_height) of `in`, resampled horizontally into `out`.
template <int C>
void Horizontal(const ImageView& in, int row0, const Coefficients& c, int out_height,
                int out_width, uint8_t* out, size_t out_stride) {
  if (C == 3 && HasAvx2Resample()) {
    return HorizontalRgbAvx2(in, row0, c, out_height, out_width, out, out_stride);
  }
  for (int yy = 0; yy < out_height; ++yy) {
    const uint8_t* src = in.row(yy + row0);
    uint8_t* dst = out + static_cast<size_t>(yy) * out_stride;
    for (int xx = 0; xx < out_width; ++xx) {
      ResamplePixel<C>(src + static_cast<size_t>(c.first[xx]) * C,
                       &c.kk[static_cast<size_t>(xx) * c.ksize], c.count[xx], dst + xx * C);
    }
  }
}

// Rows first[yy] - row_shift ... of `in`, resampled vertically into `out` (out_height rows of
// row_bytes bytes, out_stride apart).
void Vertical(const ImageView& in, int row_shift, const Coefficients& c, int out_height,
              size_t row_bytes, uint8_t* out, size_t out_stride) {
  if (HasAvx2Resample()) {
    return VerticalAvx2(in, row_shift, c, out_height, row_bytes, out, out_stride);
  }
  std::vector<int32_t> acc(row_bytes);
  for (int yy = 0; yy < out_height; ++yy) {
    const int ymin = c.first[yy] - row_shift;
    const int n = c.count[yy];
    const int32_t* k = &c.kk[static_cast<size_t>(yy) * c.ksize];
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int y = 0; y < n; ++y) {
      const uint8_t* src = in.row(ymin + y);
      const int32_t w = k[y];
      for (size_t i = 0; i < row_bytes; ++i) acc[i] += src[i] * w;
    }
    uint8_t* dst = out + static_cast<size_t>(yy) * out_stride;
    for (size_t i = 0; i < row_bytes; ++i) dst[i] = Clip8(acc[i]);
  }
}

// The intermediate image between the two passes, in a per-thread buffer reused from image to
// image.
uint8_t* Scratch(size_t bytes) {
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < bytes) scratch.resize(bytes);
  return scratch.data();
}

// Output pixel xx takes what pixel out_width - 1 - xx took.
void Mirror(Coefficients& c) {
  const int n = static_cast<int>(c.first.size());
  std::reverse(c.first.begin(), c.first.end());
  std::reverse(c.count.begin(), c.count.end());
  for (int a = 0, b = n - 1; a < b; ++a, --b) {
    std::swap_ranges(c.kk.begin() + static_cast<ptrdiff_t>(a) * c.ksize,
                     c.kk.begin() + static_cast<ptrdiff_t>(a + 1) * c.ksize,
                     c.kk.begin() + static_cast<ptrdiff_t>(b) * c.ksize);
  }
}

template <int C>
void Resample(const ImageView& in, double x0, double y0, double x1, double y1, int out_height,
              int out_width, bool mirror, uint8_t* out) {
  const bool need_horizontal = mirror || out_width != in.width || x0 != 0 || x1 != out_width;
  const bool need_vertical = out_height != in.height || y0 != 0 || y1 != out_height;
  const size_t out_stride = static_cast<size_t>(out_width) * C;
  if (!need_horizontal && !need_vertical) {
    for (int y = 0; y < in.height; ++y) std::memcpy(out + y * out_stride, in.row(y), out_stride);
    return;
  }
  const Coefficients vert = Precompute(in.height, y0, y1, out_height);
  if (!need_horizontal) {
    Vertical(in, 0, vert, out_height, out_stride, out, out_stride);
    return;
  }
  Coefficients horiz = Precompute(in.width, x0, x1, out_width);
  if (mirror) Mirror(horiz);
  // Only the rows the vertical pass reads (Pillow's ybox_first .. ybox_last).
  const int first = vert.first[0];
  const int last = vert.first[out_height - 1] + vert.count[out_height - 1];
  if (!need_vertical) {
    Horizontal<C>(in, first, horiz, out_height, out_width, out, out_stride);
    return;
  }
  uint8_t* temp = Scratch(static_cast<size_t>(last - first) * out_stride);
  Horizontal<C>(in, first, horiz, last - first, out_width, temp, out_stride);
  Vertical({temp, last - first, out_width, C, out_stride}, first, vert, out_height, out_stride,
           out, out_stride);
}

}  // namespace

void ResampleBilinearInto(const ImageView& in, double x0, double y0, double x1, double y1,
                          int out_height, int out_width, bool mirror, uint8_t* out) {
  switch (in.channels) {
    case 1:
      return Resample<1>(in, x0, y0, x1, y1, out_height, out_width, mirror, out);
    case 2:
      return Resample<2>(in, x0, y0, x1, y1, out_height, out_width, mirror, out);
    case 3:
      return Resample<3>(in, x0, y0, x1, y1, out_height, out_width, mirror, out);
    case 4:
      return Resample<4>(in, x0, y0, x1, y1, out_height, out_width, mirror, out);
    default:
      throw std::invalid_argument("ResizeBilinearAntialias: channels must be 1 to 4, got " +
                                  std::to_string(in.channels));
  }
}

Image ResampleBilinear(const ImageView& in, double x0, double y0, double x1, double y1,
                       int out_height, int out_width, bool mirror) {
  Image out = Image::Zeros(out_height, out_width, in.channels);
  ResampleBilinearInto(in, x0, y0, x1, y1, out_height, out_width, mirror, out.pixels.data());
  return out;
}

void CheckResize(const char* op, const Image& image, int out_height, int out_width) {
  if (image.height < 1 || image.width < 1 || out_height < 1 || out_width < 1 ||
      image.pixels.size() != static_cast<size_t>(image.height) * image.row_bytes()) {
    throw std::invalid_argument(std::string(op) + ": cannot resize an image of " +
                                std::to_string(image.height) + "x" + std::to_string(image.width) +
                                "x" + std::to_string(image.channels) + " (" +
                                std::to_string(image.pixels.size()) + " bytes) to " +
                                std::to_string(out_height) + "x" + std::to_string(out_width));
  }
}

}  // namespace internal

namespace {

internal::ImageView ViewOf(const Image& image) {
  return {image.pixels.data(), image.height, image.width, image.channels, image.row_bytes()};
}

}  // namespace

Image ResizeBilinearAntialias(const Image& image, int out_height, int out_width) {
  internal::CheckResize("ResizeBilinearAntialias", image, out_height, out_width);
  return internal::ResampleBilinear(ViewOf(image), 0, 0, image.width, image.height, out_height,
                                    out_width);
}

Image ResizeBilinearAntialiasBox(const Image& image, double x0, double y0, double x1, double y1,
                                 int out_height, int out_width) {
  internal::CheckResize("ResizeBilinearAntialias", image, out_height, out_width);
  if (!(0 <= x0 && x0 < x1 && x1 <= image.width && 0 <= y0 && y0 < y1 && y1 <= image.height)) {
    throw std::invalid_argument("ResizeBilinearAntialiasBox: box outside the image");
  }
  return internal::ResampleBilinear(ViewOf(image), x0, y0, x1, y1, out_height, out_width);
}

}  // namespace spelt::vision
