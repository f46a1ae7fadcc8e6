// Tests of RandomResizedCropParams and PhiloxCropDraws (spelt/vision.h) against the Python
// reference, python/spelt/vision/crop.py's random_resized_crop_params, run with numpy 2.4.6 on
// np.random.Generator(np.random.Philox(key=k)); `next` is rng.integers(0, 1000) right after,
// which pins how many draws (and 32-bit half-words) the crop consumed.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <utility>

#include "spelt/random.h"
#include "spelt/vision.h"

namespace spelt::vision {
namespace {

struct Case {
  int height;
  int width;
  std::pair<double, double> scale;
  std::pair<double, double> ratio;
  uint64_t key0;
  uint64_t key1;
  CropBox expected;
  int64_t next;
};

// clang-format off
const Case kCases[] = {
    {375, 500, {0.08, 1.0}, {0.75, 1.3333333333333333}, 0u, 0u, {86, 42, 140, 121}, 186},
    {375, 500, {0.08, 1.0}, {0.75, 1.3333333333333333}, 1u, 0u, {65, 33, 235, 287}, 414},
    {375, 500, {0.08, 1.0}, {0.75, 1.3333333333333333}, 42u, 0u, {13, 43, 286, 275}, 41},
    {375, 500, {0.08, 1.0}, {0.75, 1.3333333333333333}, 7u, 1u, {4, 138, 339, 308}, 122},
    {375, 500, {0.08, 1.0}, {0.75, 1.3333333333333333}, 12345678901234567890u, 0u, {131, 71, 155, 169}, 904},
    {480, 640, {0.08, 1.0}, {0.75, 1.3333333333333333}, 0u, 0u, {110, 54, 180, 155}, 186},
    {480, 640, {0.08, 1.0}, {0.75, 1.3333333333333333}, 1u, 0u, {83, 42, 301, 367}, 414},
    {480, 640, {0.08, 1.0}, {0.75, 1.3333333333333333}, 42u, 0u, {17, 56, 365, 352}, 41},
    {480, 640, {0.08, 1.0}, {0.75, 1.3333333333333333}, 7u, 1u, {5, 177, 434, 394}, 122},
    {480, 640, {0.08, 1.0}, {0.75, 1.3333333333333333}, 12345678901234567890u, 0u, {167, 91, 199, 217}, 904},
    {1, 1, {0.08, 1.0}, {0.75, 1.3333333333333333}, 0u, 0u, {0, 0, 1, 1}, 745},
    {1, 1, {0.08, 1.0}, {0.75, 1.3333333333333333}, 1u, 0u, {0, 0, 1, 1}, 464},
    {1, 1, {0.08, 1.0}, {0.75, 1.3333333333333333}, 42u, 0u, {0, 0, 1, 1}, 939},
    {1, 1, {0.08, 1.0}, {0.75, 1.3333333333333333}, 7u, 1u, {0, 0, 1, 1}, 427},
    {1, 1, {0.08, 1.0}, {0.75, 1.3333333333333333}, 12345678901234567890u, 0u, {0, 0, 1, 1}, 725},
    {7, 3, {0.5, 1.0}, {0.5, 2.0}, 0u, 0u, {1, 0, 4, 3}, 111},
    {7, 3, {0.5, 1.0}, {0.5, 2.0}, 1u, 0u, {2, 0, 5, 3}, 900},
    {7, 3, {0.5, 1.0}, {0.5, 2.0}, 42u, 0u, {1, 0, 5, 3}, 876},
    {7, 3, {0.5, 1.0}, {0.5, 2.0}, 7u, 1u, {0, 0, 4, 3}, 918},
    {7, 3, {0.5, 1.0}, {0.5, 2.0}, 12345678901234567890u, 0u, {1, 0, 4, 3}, 996},
    // Never fits: the fallback, aspect clamped (wide, then tall).
    {100, 100, {0.9, 1.0}, {3.0, 4.0}, 0u, 0u, {33, 0, 33, 100}, 293},
    {100, 100, {0.9, 1.0}, {3.0, 4.0}, 1u, 0u, {33, 0, 33, 100}, 904},
    {100, 100, {0.9, 1.0}, {3.0, 4.0}, 42u, 0u, {33, 0, 33, 100}, 3},
    {100, 100, {0.9, 1.0}, {3.0, 4.0}, 7u, 1u, {33, 0, 33, 100}, 649},
    {100, 100, {0.9, 1.0}, {3.0, 4.0}, 12345678901234567890u, 0u, {33, 0, 33, 100}, 31},
    {100, 100, {0.9, 1.0}, {0.25, 0.3}, 0u, 0u, {0, 35, 100, 30}, 293},
    {100, 100, {0.9, 1.0}, {0.25, 0.3}, 1u, 0u, {0, 35, 100, 30}, 904},
    {100, 100, {0.9, 1.0}, {0.25, 0.3}, 42u, 0u, {0, 35, 100, 30}, 3},
    {100, 100, {0.9, 1.0}, {0.25, 0.3}, 7u, 1u, {0, 35, 100, 30}, 649},
    {100, 100, {0.9, 1.0}, {0.25, 0.3}, 12345678901234567890u, 0u, {0, 35, 100, 30}, 31},
    {10, 400, {0.08, 1.0}, {0.75, 1.3333333333333333}, 0u, 0u, {0, 193, 10, 13}, 293},
    {10, 400, {0.08, 1.0}, {0.75, 1.3333333333333333}, 1u, 0u, {0, 193, 10, 13}, 904},
    {10, 400, {0.08, 1.0}, {0.75, 1.3333333333333333}, 42u, 0u, {0, 193, 10, 13}, 3},
    {10, 400, {0.08, 1.0}, {0.75, 1.3333333333333333}, 7u, 1u, {0, 193, 10, 13}, 649},
    {10, 400, {0.08, 1.0}, {0.75, 1.3333333333333333}, 12345678901234567890u, 0u, {0, 193, 10, 13}, 31},
    {1000000, 3, {0.01, 1.0}, {0.5, 2.0}, 0u, 0u, {499997, 0, 6, 3}, 293},
    {1000000, 3, {0.01, 1.0}, {0.5, 2.0}, 1u, 0u, {499997, 0, 6, 3}, 904},
    {1000000, 3, {0.01, 1.0}, {0.5, 2.0}, 42u, 0u, {499997, 0, 6, 3}, 3},
    {1000000, 3, {0.01, 1.0}, {0.5, 2.0}, 7u, 1u, {499997, 0, 6, 3}, 649},
    {1000000, 3, {0.01, 1.0}, {0.5, 2.0}, 12345678901234567890u, 0u, {499997, 0, 6, 3}, 31},
    // The whole image: integers(0, 1) draws nothing.
    {224, 224, {1.0, 1.0}, {1.0, 1.0}, 0u, 0u, {0, 0, 224, 224}, 365},
    {224, 224, {1.0, 1.0}, {1.0, 1.0}, 1u, 0u, {0, 0, 224, 224}, 464},
    {224, 224, {1.0, 1.0}, {1.0, 1.0}, 42u, 0u, {0, 0, 224, 224}, 939},
    {224, 224, {1.0, 1.0}, {1.0, 1.0}, 7u, 1u, {0, 0, 224, 224}, 427},
    {224, 224, {1.0, 1.0}, {1.0, 1.0}, 12345678901234567890u, 0u, {0, 0, 224, 224}, 593},
    // Ranges in the millions for the bounded-integer draws.
    {3000000, 3000, {0.0001, 0.001}, {0.75, 1.3333333333333333}, 0u, 0u, {1096051, 231, 1074, 925}, 186},
    {3000000, 3000, {0.0001, 0.001}, {0.75, 1.3333333333333333}, 1u, 0u, {1394037, 152, 1658, 2026}, 414},
    {3000000, 3000, {0.0001, 0.001}, {0.75, 1.3333333333333333}, 42u, 0u, {2815764, 424, 3003, 2512}, 471},
    {3000000, 3000, {0.0001, 0.001}, {0.75, 1.3333333333333333}, 7u, 1u, {1280066, 139, 2946, 2732}, 713},
    {3000000, 3000, {0.0001, 0.001}, {0.75, 1.3333333333333333}, 12345678901234567890u, 0u, {1778956, 379, 1145, 1249}, 904},
};
// clang-format on

TEST(VisionCropParamsTest, MatchesPythonReferenceOnNumpyPhilox) {
  for (const Case& c : kCases) {
    Philox philox({c.key0, c.key1}, {0, 0, 0, 0});
    PhiloxCropDraws draws(philox);
    const CropBox box = RandomResizedCropParams(c.height, c.width, c.scale, c.ratio, draws);
    EXPECT_EQ(box, c.expected) << c.height << "x" << c.width << " key " << c.key0 << " got "
                               << box.top << "," << box.left << "," << box.height << ","
                               << box.width;
    EXPECT_EQ(draws.Integers(0, 1000), c.next) << c.height << "x" << c.width << " key " << c.key0;
  }
}

// A scripted source: the draws a test chooses, and a record of what was asked.
class ScriptedDraws final : public CropDraws {
 public:
  std::deque<double> uniforms;  // in [0, 1): Uniform returns lo + (hi - lo) * u
  std::deque<int64_t> integers;
  int uniform_calls = 0;
  int integer_calls = 0;
  double Uniform(double lo, double hi) override {
    ++uniform_calls;
    const double u = uniforms.front();
    uniforms.pop_front();
    return lo + (hi - lo) * u;
  }
  int64_t Integers(int64_t lo, int64_t hi) override {
    ++integer_calls;
    const int64_t v = integers.front();
    integers.pop_front();
    EXPECT_TRUE(lo <= v && v < hi);
    return v;
  }
};

TEST(VisionCropParamsTest, FirstFittingAttemptDrawsTopThenLeft) {
  ScriptedDraws draws;
  // Attempt 1 on a 10x10 image: s ~ 1, aspect ~ 4: w = 20 > 10, no fit. Attempt 2: s = 0.25,
  // aspect ~ 1: w = h = 5, fits; then top 3 and left 4.
  draws.uniforms = {1 - 1e-9, 1 - 1e-12, 0.0, 0.5};
  draws.integers = {3, 4};
  const CropBox box = RandomResizedCropParams(10, 10, {0.25, 1.0}, {0.25, 4.0}, draws);
  EXPECT_EQ(box, (CropBox{3, 4, 5, 5}));
  EXPECT_EQ(draws.uniform_calls, 4);
  EXPECT_EQ(draws.integer_calls, 2);
}

TEST(VisionCropParamsTest, FallbackAfterTwentyDraws) {
  ScriptedDraws draws;
  for (int i = 0; i < 20; ++i) draws.uniforms.push_back(0.5);
  // aspect in [5, 6]: never fits a square image, then the centred crop clamped to ratio 6.
  const CropBox box = RandomResizedCropParams(12, 12, {0.5, 1.0}, {5.0, 6.0}, draws);
  EXPECT_EQ(draws.uniform_calls, 20);
  EXPECT_EQ(draws.integer_calls, 0);
  EXPECT_EQ(box, (CropBox{5, 0, 2, 12}));  // h = round(12 / 5) = 2, top = (12 - 2) // 2
}

TEST(VisionCropParamsTest, RoundsHalfToEven) {
  ScriptedDraws half;
  half.uniforms = {0.0, 0.0};
  half.integers = {1, 2};
  // 5x5 image, s = 0.25, aspect 1: area 6.25, sqrt 2.5 -> 2.
  EXPECT_EQ(RandomResizedCropParams(5, 5, {0.25, 0.5}, {1.0, 1.0}, half), (CropBox{1, 2, 2, 2}));
  ScriptedDraws odd;
  odd.uniforms = {0.0, 0.0};
  odd.integers = {0, 0};
  // 7x7 image, s = 0.25: area 12.25, sqrt 3.5 -> 4.
  EXPECT_EQ(RandomResizedCropParams(7, 7, {0.25, 0.5}, {1.0, 1.0}, odd), (CropBox{0, 0, 4, 4}));
}

TEST(VisionCropParamsTest, RejectsBadArguments) {
  Philox philox({1, 2}, {0, 0, 0, 0});
  PhiloxCropDraws draws(philox);
  EXPECT_THROW(RandomResizedCropParams(0, 5, {0.08, 1.0}, {0.75, 1.33}, draws),
               std::invalid_argument);
  EXPECT_THROW(RandomResizedCropParams(5, 5, {0.0, 1.0}, {0.75, 1.33}, draws),
               std::invalid_argument);
  EXPECT_THROW(RandomResizedCropParams(5, 5, {0.5, 0.4}, {0.75, 1.33}, draws),
               std::invalid_argument);
  EXPECT_THROW(RandomResizedCropParams(5, 5, {0.08, 1.0}, {-1.0, 1.33}, draws),
               std::invalid_argument);
  EXPECT_THROW(draws.Integers(3, 3), std::invalid_argument);
}

}  // namespace
}  // namespace spelt::vision
