// Tests for MapDataset::Range and MapDataset::Source (ops/source_dataset.cc, core/source.cc). Expected values marked "Grain 0.2.18" were computed with
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

TEST(MapDatasetRangeTest, LengthsMatchPythonRange) {
  // len(range(...)) / len(grain.MapDataset.range(...)).
  EXPECT_EQ(MapDataset::Range(10).Length(), 10);
  EXPECT_EQ(MapDataset::Range(2, 10, 3).Length(), 3);
  EXPECT_EQ(MapDataset::Range(10, 2, -3).Length(), 3);
  EXPECT_EQ(MapDataset::Range(5, 5).Length(), 0);
  EXPECT_EQ(MapDataset::Range(5, 0).Length(), 0);
  EXPECT_EQ(MapDataset::Range(0, 5, -1).Length(), 0);
  EXPECT_EQ(MapDataset::Range(-3, 4, 2).Length(), 4);
  EXPECT_EQ(MapDataset::Range(10, -10, -7).Length(), 3);
  EXPECT_EQ(MapDataset::Range(0).Length(), 0);
  EXPECT_EQ(MapDataset::Range(-5).Length(), 0);
}

TEST(MapDatasetRangeTest, HugeStepDoesNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // Python: len(range(0, 2**63-1, 2**63-1)) == 1, len(range(0, 10, 2**63-1)) == 1,
  // len(range(5, -5, -(2**63-1))) == 1.
  EXPECT_EQ(MapDataset::Range(0, kMax, kMax).Length(), 1);
  EXPECT_EQ(MapDataset::Range(0, 10, kMax).Length(), 1);
  EXPECT_EQ(MapDataset::Range(5, -5, -kMax).Length(), 1);
  EXPECT_EQ(MapDataset::Range(0, 10, kMax).Get(0)->AsInt(), 0);
}

TEST(MapDatasetRangeTest, ElementsMatchPythonRange) {
  EXPECT_EQ(GetInts(MapDataset::Range(10, -10, -7), 3), (Ints{10, 3, -4}));
  EXPECT_EQ(GetInts(MapDataset::Range(-3, 4, 2), 4), (Ints{-3, -1, 1, 3}));
}

TEST(MapDatasetRangeTest, ZeroStepThrows) {
  EXPECT_THROW(MapDataset::Range(0, 10, 0), std::invalid_argument);
}

TEST(MapDatasetRangeTest, IndexBeyondLengthWrapsIntoLaterEpochs) {
  // Grain 0.2.18: [MapDataset.range(2, 10, 3)[i] for i in range(7)].
  EXPECT_EQ(GetInts(MapDataset::Range(2, 10, 3), 7), (Ints{2, 5, 8, 2, 5, 8, 2}));
}

TEST(MapDatasetRangeTest, NegativeIndexThrowsOutOfRange) {
  EXPECT_THROW(MapDataset::Range(10).Get(-1), std::out_of_range);
}

TEST(MapDatasetRangeTest, GetOnEmptyDatasetThrows) {
  EXPECT_THROW(MapDataset::Range(0).Get(0), std::out_of_range);
}

TEST(MapDatasetSourceTest, SourceWrapsIndexModuloLength) {
  auto src = std::make_shared<InMemorySource>(
      std::vector<Value>{Value::Text("a"), Value::Text("b"), Value::Text("c")});
  MapDataset ds = MapDataset::Source(src);
  EXPECT_EQ(ds.Length(), 3);
  const char* expected[] = {"a", "b", "c", "a", "b", "c", "a"};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(*ds.Get(i), Value::Text(expected[i])) << i;
  }
  EXPECT_EQ(ds.Get(3 * 1000000 + 1)->as<String>().data, "b");
}

TEST(MapDatasetSourceTest, NullSourceThrows) {
  EXPECT_THROW(MapDataset::Source(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
