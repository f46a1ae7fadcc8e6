// Tests for IterDataset::Filter (ops/iter_filter.cc). Expected values marked "Grain 0.2.18" were computed with
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

TEST(IterOpsTest, FilterKeepsMatchingAndPassesStateThrough) {
  auto it = RangeIter(10).Filter([](const Value& v) { return v.AsInt() % 4 == 1; }).MakeIterator();
  EXPECT_EQ(it->Next()->AsInt(), 1);
  EXPECT_EQ(it->GetState(), State({{"next_index", 2}}));
  EXPECT_EQ(it->Next()->AsInt(), 5);
  EXPECT_EQ(it->GetState(), State({{"next_index", 6}}));
  EXPECT_EQ(it->Next()->AsInt(), 9);
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_FALSE(it->Next().has_value());
  EXPECT_EQ(it->GetState(), State({{"next_index", 10}}));
}

}  // namespace
}  // namespace spelt
