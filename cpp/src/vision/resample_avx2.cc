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

// Two output pixels per 256-bit register: lanes 0-3 pixel xx (R, G, B and one unused byte),
// lanes 4-7 pixel xx + 1. Each tap loads 4 bytes per pixel, so a pair with a pixel whose last
// tap's 4th byte would lie past its row is made by ResamplePixel.
__attribute__((target("avx2"))) void HorizontalRgbAvx2(const ImageView& in, int row0,
                                                       const Coefficients& c, int out_height,
                                                       int out_width, uint8_t* out,
                                                       size_t out_stride) {
  const size_t in_row_bytes = static_cast<size_t>(in.width) * 3;
  // Pairs whose taps (first + ksize, weights past count being 0) all stay in the row take the
  // vector path; the others, and an odd last pixel, ResamplePixel.
  std::vector<char> vector_pair(out_width / 2);
  for (int p = 0; p < out_width / 2; ++p) {
    const int last_first = std::max(c.first[2 * p], c.first[2 * p + 1]);
    vector_pair[p] = static_cast<size_t>(last_first + c.ksize) * 3 + 1 <= in_row_bytes;
  }
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const __m256i spread = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  for (int yy = 0; yy < out_height; ++yy) {
    const uint8_t* src = in.row(yy + row0);
    uint8_t* dst = out + static_cast<size_t>(yy) * out_stride;
    for (int xx = 0; xx + 1 < out_width; xx += 2) {
      if (!vector_pair[xx / 2]) {
        for (const int x : {xx, xx + 1}) {
          ResamplePixel<3>(src + static_cast<size_t>(c.first[x]) * 3,
                           &c.kk[static_cast<size_t>(x) * c.ksize], c.count[x],
                           dst + static_cast<size_t>(x) * 3);
        }
        continue;
      }
      const uint8_t* pa = src + static_cast<size_t>(c.first[xx]) * 3;
      const uint8_t* pb = src + static_cast<size_t>(c.first[xx + 1]) * 3;
      const int32_t* ka = &c.kk[static_cast<size_t>(xx) * c.ksize];
      const int32_t* kb = ka + c.ksize;
      const int taps = c.count[xx] > c.count[xx + 1] ? c.count[xx] : c.count[xx + 1];
      __m256i sums = half;
      for (int x = 0; x < taps; ++x) {
        int32_t a, b;
        std::memcpy(&a, pa + x * 3, 4);
        std::memcpy(&b, pb + x * 3, 4);
        const __m256i pixels = _mm256_cvtepu8_epi32(_mm_insert_epi32(_mm_cvtsi32_si128(a), b, 1));
        const __m256i weights = _mm256_permutevar8x32_epi32(
            _mm256_castsi128_si256(_mm_insert_epi32(_mm_cvtsi32_si128(ka[x]), kb[x], 1)), spread);
        sums = _mm256_add_epi32(sums, _mm256_mullo_epi32(pixels, weights));
      }
      const __m256i bytes = Bytes(sums);
      const int32_t ra = _mm_cvtsi128_si32(_mm256_castsi256_si128(bytes));
      const int32_t rb = _mm_cvtsi128_si32(_mm256_extracti128_si256(bytes, 1));
      std::memcpy(dst + static_cast<size_t>(xx) * 3, &ra, 3);
      std::memcpy(dst + static_cast<size_t>(xx) * 3 + 3, &rb, 3);
    }
    if (out_width % 2 != 0) {
      const int xx = out_width - 1;
      ResamplePixel<3>(src + static_cast<size_t>(c.first[xx]) * 3,
                       &c.kk[static_cast<size_t>(xx) * c.ksize], c.count[xx],
                       dst + static_cast<size_t>(xx) * 3);
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
