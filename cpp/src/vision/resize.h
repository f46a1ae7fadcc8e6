// The resampling core of ResizeBilinearAntialias, on a strided view, for the fused JPEG path.
#ifndef SPELT_VISION_RESIZE_H_
#define SPELT_VISION_RESIZE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "spelt/vision.h"

namespace spelt::vision::internal {

// Pixels not owned: `height` rows of `width` * `channels` bytes, `stride` bytes apart.
struct ImageView {
  const uint8_t* data = nullptr;
  int height = 0;
  int width = 0;
  int channels = 3;
  size_t stride = 0;
  const uint8_t* row(int y) const { return data + static_cast<size_t>(y) * stride; }
};

// Pillow's resize of box (x0, y0, x1, y1) of `in` to out_height x out_width, BILINEAR; with
// `mirror`, mirrored left to right (the horizontal pass writes its pixels in reverse order).
// REQUIRES (checked by the callers): a valid box inside `in`, output sides >= 1.
Image ResampleBilinear(const ImageView& in, double x0, double y0, double x1, double y1,
                       int out_height, int out_width, bool mirror = false);
// The same, written to `out` (out_height * out_width * in.channels bytes, rows packed).
void ResampleBilinearInto(const ImageView& in, double x0, double y0, double x1, double y1,
                          int out_height, int out_width, bool mirror, uint8_t* out);

// std::invalid_argument naming `op` unless `image` is a non-empty image whose pixels match its
// shape and both output sides are >= 1.
void CheckResize(const char* op, const Image& image, int out_height, int out_width);

// Pillow's fixed point for 8-bit images (libImaging/Resample.c PRECISION_BITS).
inline constexpr int kPrecisionBits = 32 - 8 - 2;

// One pass's filter: for output pixel i, `count[i]` input pixels from `first[i]`, weighted by
// kk[i * ksize ...] (zero past count[i]), in kPrecisionBits fixed point.
struct Coefficients {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> kk;
};

// Pillow's clip8: a fixed-point sum to a byte.
inline uint8_t Clip8(int32_t in) {
  if (in >= (1 << kPrecisionBits << 8)) return 255;
  if (in <= 0) return 0;
  return static_cast<uint8_t>(in >> kPrecisionBits);
}

// One output pixel of a horizontal pass: `n` input pixels of C channels at `p`, weights `k`.
template <int C>
inline void ResamplePixel(const uint8_t* p, const int32_t* k, int n, uint8_t* dst) {
  int32_t ss[C];
  for (int ch = 0; ch < C; ++ch) ss[ch] = 1 << (kPrecisionBits - 1);
  for (int x = 0; x < n; ++x) {
    for (int ch = 0; ch < C; ++ch) ss[ch] += p[x * C + ch] * k[x];
  }
  for (int ch = 0; ch < C; ++ch) dst[ch] = Clip8(ss[ch]);
}

// The AVX2 passes (resample_avx2.cc), used where the CPU has AVX2: the same integer sums as
// the portable passes in resize.cc, so the same bytes. Rows [row0, row0 + out_height) of `in`
// resampled horizontally (3 channels) into `out` (out_height rows of out_width * 3 bytes,
// `out_stride` apart); and `in`'s rows first[yy] - row_shift ... resampled vertically into
// `out` (out_height rows of row_bytes bytes, `out_stride` apart, any channel count).
bool HasAvx2Resample();
void HorizontalRgbAvx2(const ImageView& in, int row0, const Coefficients& c, int out_height,
                       int out_width, uint8_t* out, size_t out_stride);
void VerticalAvx2(const ImageView& in, int row_shift, const Coefficients& c, int out_height,
                  size_t row_bytes, uint8_t* out, size_t out_stride);

}  // namespace spelt::vision::internal

#endif  // SPELT_VISION_RESIZE_H_
