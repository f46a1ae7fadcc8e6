// RandomResizedCropParams and PhiloxCropDraws (spelt/vision.h): torchvision's
// RandomResizedCrop.get_params as python/spelt/vision/crop.py implements it, with numpy
// Generator's uniform and bounded integers over Philox.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "spelt/vision.h"

namespace spelt::vision {
namespace {

constexpr int kAttempts = 10;  // crop.py's ATTEMPTS, torchvision's

// Python's round(x) for a finite double: to the nearest integer, halves to even.
double RoundHalfEven(double x) {
  const double lower = std::floor(x);
  const double diff = x - lower;
  if (diff > 0.5) return lower + 1.0;
  if (diff < 0.5) return lower;
  return std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
}

std::pair<double, double> CheckRange(const char* name, std::pair<double, double> range) {
  if (!(0 < range.first && range.first <= range.second)) {
    throw std::invalid_argument(std::string("RandomResizedCropParams: ") + name +
                                " must be (min, max) with 0 < min <= max");
  }
  return range;
}

}  // namespace

double PhiloxCropDraws::Uniform(double lo, double hi) {
  // numpy: random_uniform(bitgen, low, high - low) = low + range * next_double.
  return lo + (hi - lo) * philox_.NextDouble();
}

uint32_t PhiloxCropDraws::NextUint32() {
  // numpy's philox_next32: the low half of a 64-bit output now, its high half next time.
  if (has_uint32_) {
    has_uint32_ = false;
    return uint32_;
  }
  const uint64_t next = philox_.NextUint64();
  has_uint32_ = true;
  uint32_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next & 0xffffffffu);
}

int64_t PhiloxCropDraws::Integers(int64_t lo, int64_t hi) {
  if (!(lo < hi) || static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) > (uint64_t{1} << 32)) {
    throw std::invalid_argument("PhiloxCropDraws::Integers: need lo < hi <= lo + 2^32");
  }
  // numpy's random_bounded_uint64_fill for a range that fits 32 bits (rng = hi - lo - 1).
  const uint64_t rng = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) - 1;
  if (rng == 0) return lo;  // no draw
  if (rng == 0xffffffffu) return lo + static_cast<int64_t>(NextUint32());
  // buffered_bounded_lemire_uint32
  const uint32_t rng_excl = static_cast<uint32_t>(rng) + 1;
  uint64_t m = static_cast<uint64_t>(NextUint32()) * rng_excl;
  uint32_t leftover = static_cast<uint32_t>(m & 0xffffffffu);
  if (leftover < rng_excl) {
    const uint32_t threshold = (std::numeric_limits<uint32_t>::max() - static_cast<uint32_t>(rng)) %
                               rng_excl;
    while (leftover < threshold) {
      m = static_cast<uint64_t>(NextUint32()) * rng_excl;
      leftover = static_cast<uint32_t>(m & 0xffffffffu);
    }
  }
  return lo + static_cast<int64_t>(m >> 32);
}

CropBox RandomResizedCropParams(int height, int width, std::pair<double, double> scale,
                                std::pair<double, double> ratio, CropDraws& draws) {
  if (height < 1 || width < 1) {
    throw std::invalid_argument("RandomResizedCropParams: image of " + std::to_string(height) +
                                "x" + std::to_string(width) + " pixels");
  }
  scale = CheckRange("scale", scale);
  ratio = CheckRange("ratio", ratio);
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(ratio.first);
  const double log_hi = std::log(ratio.second);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const double target_area = area * draws.Uniform(scale.first, scale.second);
    const double aspect = std::exp(draws.Uniform(log_lo, log_hi));
    const double w = RoundHalfEven(std::sqrt(target_area * aspect));
    const double h = RoundHalfEven(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int hi = static_cast<int>(h);
      const int wi = static_cast<int>(w);
      const int top = static_cast<int>(draws.Integers(0, height - hi + 1));
      const int left = static_cast<int>(draws.Integers(0, width - wi + 1));
      return {top, left, hi, wi};
    }
  }
  int h = height;
  int w = width;
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  if (in_ratio < ratio.first) {
    h = std::max(1, static_cast<int>(RoundHalfEven(width / ratio.first)));
  } else if (in_ratio > ratio.second) {
    w = std::max(1, static_cast<int>(RoundHalfEven(height * ratio.second)));
  }
  // Python's floor division; both operands are >= 0 here (h <= height, w <= width).
  return {(height - h) / 2, (width - w) / 2, h, w};
}

}  // namespace spelt::vision
