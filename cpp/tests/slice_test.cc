// Tests for MapDataset::Slice (ops/slice.cc). Expected values marked "Grain 0.2.18" were computed with
// Grain 0.2.18.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/random.h"
#include "spelt/source.h"
#include "spelt/value.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

struct SliceCase {
  std::optional<int64_t> start, stop, step;
  Ints expected;  // ds[i] for i in range(2 * len + 1); len = expected.size() / 2
};

TEST(MapDatasetSliceTest, PythonSliceSemanticsIncludingLaterEpochs) {
  constexpr auto N = std::nullopt;
  // Grain 0.2.18: ds = MapDataset.range(10)[start:stop:step];
  //               [ds[i] for i in range(2 * len(ds) + 1)].
  const SliceCase kCases[] = {
      {2, 8, N, {2, 3, 4, 5, 6, 7, 2, 3, 4, 5, 6, 7, 2}},
      {N, N, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9}},
      {-3, N, N, {7, 8, 9, 7, 8, 9, 7}},
      {1, N, 3, {1, 4, 7, 1, 4, 7, 1}},
      {8, 2, -2, {8, 6, 4, 8, 6, 4, 8}},
      {-100, 100, N, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0}},
      {N, N, -3, {9, 6, 3, 0, 9, 6, 3, 0, 9}},
      {-2, -8, -2, {8, 6, 4, 8, 6, 4, 8}},
      {N, -100, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9}},
  };
  for (const SliceCase& c : kCases) {
    MapDataset ds = MapDataset::Range(10).Slice(c.start, c.stop, c.step);
    const int64_t len = static_cast<int64_t>(c.expected.size()) / 2;
    EXPECT_EQ(ds.Length(), len) << c.start.value_or(-999) << ":" << c.stop.value_or(-999) << ":"
                                << c.step.value_or(-999);
    EXPECT_EQ(GetInts(ds, 2 * len + 1), c.expected)
        << c.start.value_or(-999) << ":" << c.stop.value_or(-999) << ":"
        << c.step.value_or(-999);
  }
}

TEST(MapDatasetSliceTest, EmptySlices) {
  // Grain 0.2.18: len(MapDataset.range(10)[100:200]) == 0, len(...[5:-1:-1]) == 0.
  EXPECT_EQ(MapDataset::Range(10).Slice(100, 200).Length(), 0);
  EXPECT_EQ(MapDataset::Range(10).Slice(5, -1, -1).Length(), 0);
  EXPECT_EQ(MapDataset::Range(10).Slice(7, 3).Length(), 0);
  EXPECT_THROW(MapDataset::Range(10).Slice(7, 3).Get(0), std::out_of_range);
}

TEST(MapDatasetSliceTest, HugeStep) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // Python: len(range(10)[::2**63-1]) == 1, len(range(10)[::-(2**63-1)]) == 1.
  MapDataset fwd = MapDataset::Range(10).Slice(std::nullopt, std::nullopt, kMax);
  EXPECT_EQ(fwd.Length(), 1);
  EXPECT_EQ(fwd.Get(0)->AsInt(), 0);
  MapDataset bwd = MapDataset::Range(10).Slice(std::nullopt, std::nullopt, -kMax);
  EXPECT_EQ(bwd.Length(), 1);
  EXPECT_EQ(bwd.Get(0)->AsInt(), 9);
}

TEST(MapDatasetSliceTest, ZeroStepThrows) {
  EXPECT_THROW(MapDataset::Range(10).Slice(0, 5, 0), std::invalid_argument);
}

TEST(MapDatasetSliceTest, SliceOfShuffleRereadsTheSameSubsetEveryEpoch) {
  // Epoch 0 as Grain 0.2.18: MapDataset.range(10).seed(3).shuffle()[2:7]; later epochs re-read
  // it (a fixed subset, unlike Grain, grain#1200; docs/compatibility.md).
  MapDataset base = MapDataset::Range(10).Seed(3).Shuffle();
  EXPECT_EQ(GetInts(base.Slice(2, 7), 15),
            (Ints{9, 7, 5, 3, 1, 9, 7, 5, 3, 1, 9, 7, 5, 3, 1}));
  EXPECT_EQ(GetInts(base.Slice(std::nullopt, std::nullopt, -2), 10),
            (Ints{0, 8, 3, 7, 6, 0, 8, 3, 7, 6}));
}

TEST(MapDatasetSliceTest, SliceOfSlice) {
  // range(20)[3:17][::-3] == [16, 13, 10, 7, 4].
  MapDataset ds = MapDataset::Range(20).Slice(3, 17).Slice(std::nullopt, std::nullopt, -3);
  EXPECT_EQ(ds.Length(), 5);
  EXPECT_EQ(GetInts(ds, 5), (Ints{16, 13, 10, 7, 4}));
}

}  // namespace
}  // namespace spelt
