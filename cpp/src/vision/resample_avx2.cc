// The AVX2 passes of the bilinear resample (vision/resize.h). Each output byte is the same
// 32-bit integer sum as the portable passes' (Pillow's fixed point: the products and partial
// sums are exact and cannot overflow), so the output is the same to the bit; only the order of
// the additions, which integer sums do not depend on, differs. Compiled for AVX2 by function
// attribute and called only where the CPU has it; elsewhere the portable passes run.
#include <algorithm>
#include <cstring>
#include <vector>

#include "vision/resize.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SPELT_RESAMPLE_AVX2 1
#endif

namespace spelt::vision::internal {

#ifdef SPELT_RESAMPLE_AVX2

bool HasAvx2Resample() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

namespace {

// Eight 32-bit sums to bytes, (sum >> kPrecisionBits) clamped to [0, 255] as Clip8 (sums stay
// far below 2^15 << kPrecisionBits, so the 16-bit step cannot wrap).
__attribute__((target("avx2"))) inline __m256i Bytes(__m256i sums) {
  const __m256i v = _mm256_srai_epi32(sums, kPrecisionBits);
  const __m256i w = _mm256_packus_epi32(v, v);
  return _mm256_packus_epi16(w, w);
}

}  // namespace

// Each output pixel's sums are taken with 16-bit multiply-adds (vpmaddwd), exactly: a weight
// k (bilinear weights are 0 <= k <= 2^kPrecisionBits) is split into k >> 11 and k & 2047,
// both below 2^15, and the sum is (sum of pixel * (k >> 11)) << 11 plus the sum of
// pixel * (k & 2047). A step takes 4 taps: the 12 bytes of 4 RGB pixels are loaded into both
// 128-bit lanes and spread to 16-bit words, lane 0 as (R0, R1, G0, G1, B0, B1, 0, 0) for taps
// 0-1 and lane 1 the same for taps 2-3, against weights (k0, k1, k0, k1, k0, k1, 0, 0) and
// (k2, k3, ...). A step loads 16 bytes, so a pixel whose last step would read past its row is
// made by ResamplePixel.
namespace {

constexpr int kLowBits = 11;

// The weights of every output pixel's steps, as 16 int16 words per register: at
// ((x * steps_per_pixel + s) * 2) * 16 the high parts of pixel x's taps 4s .. 4s + 3, 16 words
// later their low parts (zero past the pixel's count).
struct SplitWeights {
  int steps_per_pixel = 0;
  std::vector<int16_t> words;
  const int16_t* step(int x, int s) const {
    return &words[(static_cast<size_t>(x) * steps_per_pixel + s) * 32];
  }
};

SplitWeights Split(const Coefficients& c, int out_width) {
  SplitWeights w;
  w.steps_per_pixel = (c.ksize + 3) / 4;
  w.words.assign(static_cast<size_t>(out_width) * w.steps_per_pixel * 32, 0);
  for (int x = 0; x < out_width; ++x) {
    const int32_t* k = &c.kk[static_cast<size_t>(x) * c.ksize];
    for (int s = 0; s < w.steps_per_pixel; ++s) {
      int16_t* hi = &w.words[(static_cast<size_t>(x) * w.steps_per_pixel + s) * 32];
      int16_t* lo = hi + 16;
      for (int t = 0; t < 4; ++t) {
        const int tap = 4 * s + t;
        const int32_t kt = tap < c.count[x] ? k[tap] : 0;
        const int slot = t / 2 * 8 + t % 2;
        for (int ch = 0; ch < 3; ++ch) {
          hi[slot + 2 * ch] = static_cast<int16_t>(kt >> kLowBits);
          lo[slot + 2 * ch] = static_cast<int16_t>(kt & ((1 << kLowBits) - 1));
        }
      }
    }
  }
  return w;
}

}  // namespace

__attribute__((target("avx2"))) void HorizontalRgbAvx2(const ImageView& in, int row0,
                                                       const Coefficients& c, int out_height,
                                                       int out_width, uint8_t* out,
                                                       size_t out_stride) {
  const size_t in_row_bytes = static_cast<size_t>(in.width) * 3;
  const SplitWeights w = Split(c, out_width);
  // Pixels whose steps all read inside the row take the vector path.
  std::vector<int> steps(out_width);
  for (int x = 0; x < out_width; ++x) {
    const int n = (c.count[x] + 3) / 4;
    const size_t end = (static_cast<size_t>(c.first[x]) + 4 * static_cast<size_t>(n - 1)) * 3 + 16;
    steps[x] = end <= in_row_bytes ? n : -1;
  }
  const __m256i spread = _mm256_setr_epi8(
      0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  // taps 0, 1
      6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);  // taps 2, 3
  const __m128i half = _mm_set1_epi32(1 << (kPrecisionBits - 1));
  for (int yy = 0; yy < out_height; ++yy) {
    const uint8_t* src = in.row(yy + row0);
    uint8_t* dst = out + static_cast<size_t>(yy) * out_stride;
    for (int x = 0; x < out_width; ++x) {
      const uint8_t* p = src + static_cast<size_t>(c.first[x]) * 3;
      if (steps[x] < 0) {
        ResamplePixel<3>(p, &c.kk[static_cast<size_t>(x) * c.ksize], c.count[x], dst + x * 3);
        continue;
      }
      const int16_t* k = w.step(x, 0);
      __m256i hi = _mm256_setzero_si256(), lo = _mm256_setzero_si256();
      for (int s = 0; s < steps[x]; ++s, p += 12, k += 32) {
        const __m256i pixels = _mm256_shuffle_epi8(
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
            spread);
        const __m256i k_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k));
        const __m256i k_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + 16));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(pixels, k_hi));
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(pixels, k_lo));
      }
      const __m256i sums = _mm256_add_epi32(_mm256_slli_epi32(hi, kLowBits), lo);
      __m128i v = _mm_add_epi32(_mm_add_epi32(_mm256_castsi256_si128(sums),
                                              _mm256_extracti128_si256(sums, 1)),
                                half);
      v = _mm_srai_epi32(v, kPrecisionBits);
      v = _mm_packus_epi16(_mm_packus_epi32(v, v), v);
      const int32_t rgb = _mm_cvtsi128_si32(v);
      std::memcpy(dst + static_cast<size_t>(x) * 3, &rgb, 3);
    }
  }
}

// 16 bytes of a row per step, their sums in two registers across the taps.
__attribute__((target("avx2"))) void VerticalAvx2(const ImageView& in, int row_shift,
                                                  const Coefficients& c, int out_height,
                                                  size_t row_bytes, uint8_t* out,
                                                  size_t out_stride) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const size_t vector_end = row_bytes & ~size_t{15};
  for (int yy = 0; yy < out_height; ++yy) {
    const int ymin = c.first[yy] - row_shift;
    const int n = c.count[yy];
    const int32_t* k = &c.kk[static_cast<size_t>(yy) * c.ksize];
    uint8_t* dst = out + static_cast<size_t>(yy) * out_stride;
    for (size_t i = 0; i < vector_end; i += 16) {
      __m256i lo = half, hi = half;
      for (int y = 0; y < n; ++y) {
        const __m128i bytes =
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.row(ymin + y) + i));
        const __m256i w = _mm256_set1_epi32(k[y]);
        lo = _mm256_add_epi32(lo, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(bytes), w));
        hi = _mm256_add_epi32(
            hi, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)), w));
      }
      // Bytes() leaves each 128-bit half's 4 bytes at that half's bottom.
      const __m256i lo_bytes = Bytes(lo), hi_bytes = Bytes(hi);
      const uint32_t parts[4] = {
          static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(lo_bytes))),
          static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(lo_bytes, 1))),
          static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(hi_bytes))),
          static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(hi_bytes, 1)))};
      std::memcpy(dst + i, parts, 16);
    }
    for (size_t i = vector_end; i < row_bytes; ++i) {
      int32_t ss = 1 << (kPrecisionBits - 1);
      for (int y = 0; y < n; ++y) ss += in.row(ymin + y)[i] * k[y];
      dst[i] = Clip8(ss);
    }
  }
}

#else

bool HasAvx2Resample() { return false; }
void HorizontalRgbAvx2(const ImageView&, int, const Coefficients&, int, int, uint8_t*, size_t) {}
void VerticalAvx2(const ImageView&, int, const Coefficients&, int, size_t, uint8_t*, size_t) {}

#endif

}  // namespace spelt::vision::internal
