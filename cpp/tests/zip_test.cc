// Tests for MapDataset::Zip and IterDataset::Zip (ops/zip.cc). Messages and state layouts are
// Grain 0.2.18's.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "spelt/dataset.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

Ints Pair(const Value& v) { return {v[0].AsInt(), v[1].AsInt()}; }

TEST(ZipTest, MapZipsByIndexAndGetManyAgrees) {
  MapDataset zipped = MapDataset::Zip({MapDataset::Range(5), MapDataset::Range(10, 15)});
  EXPECT_EQ(zipped.Length(), 5);
  EXPECT_EQ(Pair(*zipped.Get(2)), (Ints{2, 12}));
  EXPECT_EQ(Pair(*zipped.Get(7)), (Ints{2, 12}));  // epoch 1
  std::vector<std::optional<Value>> many;
  const std::vector<int64_t> indices{4, 0, 3};
  zipped.node()->GetMany(indices, &many);
  ASSERT_EQ(many.size(), 3u);
  EXPECT_EQ(Pair(*many[0]), (Ints{4, 14}));
  EXPECT_EQ(Pair(*many[1]), (Ints{0, 10}));
}

TEST(ZipTest, MapFilteredElementIsNoneInTuple) {
  MapDataset odd = MapDataset::Range(4).Filter([](const Value& v) { return v.AsInt() % 2 == 1; });
  Value t = *MapDataset::Zip({MapDataset::Range(4), odd}).Get(0);
  EXPECT_TRUE(t[1].is_none());
  EXPECT_EQ(t[0].AsInt(), 0);
}

TEST(ZipTest, MapRejectsEmptyAndUnequalLengths) {
  EXPECT_THROW(MapDataset::Zip({}), std::invalid_argument);
  EXPECT_THROW(MapDataset::Zip({MapDataset::Range(3), MapDataset::Range(4)}),
               std::invalid_argument);
}

TEST(ZipTest, IterZipsAndRestores) {
  IterDataset zipped = IterDataset::Zip({RangeIter(5), RangeIter(5).Map([](Value v) {
                                           return Value(v.AsInt() * 10);
                                         })});
  auto it = zipped.MakeIterator();
  EXPECT_EQ(Pair(*it->Next()), (Ints{0, 0}));
  EXPECT_EQ(Pair(*it->Next()), (Ints{1, 10}));
  EXPECT_EQ(it->GetState(),
            (State{{"parents", State::array({{{"next_index", 2}}, {{"next_index", 2}}})}}));
  CheckRestoreAtEveryPosition(zipped, "zip");
}

TEST(ZipTest, IterStrictRaisesOnUnequalLengths) {
  auto shorter = IterDataset::Zip({RangeIter(3), RangeIter(2)}).MakeIterator();
  Drain(*shorter, 2);
  try {
    shorter->Next();
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "ZipIterDataset argument 2 is shorter than argument 1");
  }
  auto longer = IterDataset::Zip({RangeIter(2), RangeIter(3), RangeIter(3)}).MakeIterator();
  Drain(*longer, 2);
  try {
    longer->Next();
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "ZipIterDataset argument 2 is longer than argument 1");
  }
  auto loose = IterDataset::Zip({RangeIter(3), RangeIter(2)}, /*strict=*/false).MakeIterator();
  EXPECT_EQ(Drain(*loose).size(), 2u);
}

}  // namespace
}  // namespace spelt
