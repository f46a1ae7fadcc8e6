// Tests for MapDataset::Filter (ops/filter.cc). Expected values marked "Grain 0.2.18" were computed with
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

TEST(MapDatasetMapTest, FilterReturnsNulloptForRemovedElements) {
  // Grain 0.2.18: ds = MapDataset.range(10).filter(lambda x: x % 3 != 0);
  // [ds[i] for i in range(12)] == [None, 1, 2, None, 4, 5, None, 7, 8, None, None, 1].
  MapDataset ds = MapDataset::Range(10).Filter([](const Value& v) { return v.AsInt() % 3 != 0; });
  EXPECT_EQ(ds.Length(), 10);
  const int64_t expected[12] = {-1, 1, 2, -1, 4, 5, -1, 7, 8, -1, -1, 1};
  for (int i = 0; i < 12; ++i) {
    std::optional<Value> v = ds.Get(i);
    if (expected[i] < 0) {
      EXPECT_FALSE(v.has_value()) << i;
    } else {
      ASSERT_TRUE(v.has_value()) << i;
      EXPECT_EQ(v->AsInt(), expected[i]) << i;
    }
  }
}

TEST(MapDatasetMapTest, MapIsNotCalledOnFilteredElements) {
  int calls = 0;
  MapDataset ds = MapDataset::Range(10)
                      .Filter([](const Value& v) { return v.AsInt() % 2 == 0; })
                      .Map([&calls](Value v) {
                        ++calls;
                        return Value(v.AsInt() + 100);
                      })
                      .MapWithIndex([&calls](int64_t, Value v) {
                        ++calls;
                        return v;
                      });
  EXPECT_FALSE(ds.Get(1).has_value());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(ds.Get(2)->AsInt(), 102);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace spelt
