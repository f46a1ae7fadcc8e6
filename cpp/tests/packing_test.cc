// Sequence packing from C++ alone (spelt/packing.h): first-fit / best-fit placement, segment
// ids and positions, concat-then-split across element boundaries, restore at every position,
// errors, and the numpy PCG64 permutation the bin shuffle draws.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "core/pcg64.h"
#include "spelt/packing.h"
#include "test_util.h"

namespace spelt {
namespace {

using testing::Drain;
using testing::Ints;

Array Tokens(int64_t n, int64_t first) {
  Array a = Array::Allocate(DType::kInt32, {n});
  auto* p = reinterpret_cast<int32_t*>(a.mutable_data());
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(first + i);
  return a;
}

Ints Row(const Value& element, const char* key) {
  const Array& a = element[key].AsArray();
  Ints out;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    int32_t v;
    std::memcpy(&v, a.data + 4 * i, 4);
    out.push_back(v);
  }
  return out;
}

// Documents {"tokens": int32 [lengths[i]]} with token values 100 * i + position.
IterDataset Documents(Ints lengths) {
  return MapDataset::Range(static_cast<int64_t>(lengths.size()))
      .Map([lengths](Value v) {
        const int64_t i = v.AsInt();
        return Value::Dict({{"tokens", Tokens(lengths[static_cast<size_t>(i)], 100 * i)}});
      })
      .ToIter({.num_threads = 0});
}

PackOptions FirstFit(int64_t length, int64_t bins) {
  PackOptions o;
  o.length_struct = Value::Dict({{"tokens", Value(length)}});
  o.num_packing_bins = bins;
  o.shuffle_bins = false;
  return o;
}

TEST(Pcg64Test, PermutationEqualsNumpys) {
  // np.random.default_rng(7).permuted(range(10))
  EXPECT_EQ(internal::NumpyPermuted(7, 10), (Ints{8, 0, 7, 1, 3, 6, 2, 4, 5, 9}));
  // np.random.default_rng(2**40 + 3).permuted(range(70))[:8]
  const Ints p = internal::NumpyPermuted((int64_t{1} << 40) + 3, 70);
  EXPECT_EQ(Ints(p.begin(), p.begin() + 8), (Ints{5, 41, 51, 26, 36, 56, 53, 59}));
}

TEST(PackTest, FirstFitPlacesInFirstBinThatFits) {
  // Grain's test_packing_scenario_1: capacity 10, items 4, 8, 2 -> bins [4+2], [8].
  auto it = Pack(Documents({4, 8, 2}), FirstFit(10, 2)).MakeIterator();
  const std::vector<Value> out = Drain(*it);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Row(out[0], "tokens"), (Ints{0, 1, 2, 3, 200, 201, 0, 0, 0, 0}));
  EXPECT_EQ(Row(out[0], "tokens_segment_ids"), (Ints{1, 1, 1, 1, 2, 2, 0, 0, 0, 0}));
  EXPECT_EQ(Row(out[0], "tokens_positions"), (Ints{0, 1, 2, 3, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(Row(out[1], "tokens_segment_ids"), (Ints{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}));
  // Bins of one batch share one buffer.
  EXPECT_EQ(out[0]["tokens"].AsArray().owner, out[1]["tokens"].AsArray().owner);
}

TEST(PackTest, BestFitPlacesInFullestBin) {
  // Grain's scenario 2 for best fit: capacity 20, items 10, 15, 4 -> 4 joins the 15.
  PackOptions o = FirstFit(20, 2);
  o.strategy = PackStrategy::kBestFit;
  const std::vector<Value> out = Drain(*Pack(Documents({10, 15, 4}), o).MakeIterator());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Row(out[1], "tokens_segment_ids")[16], 2);
  EXPECT_EQ(Row(out[0], "tokens_segment_ids")[10], 0);
}

TEST(PackTest, RestoresAtEveryPosition) {
  PackOptions o = FirstFit(16, 3);
  o.shuffle_bins = true;
  o.seed = 5;
  testing::CheckRestoreAtEveryPosition(
      Pack(Documents({5, 9, 3, 12, 7, 1, 16, 4, 8, 2, 11, 6}), o), "first-fit, shuffled");
}

TEST(PackTest, TooLongSequenceNamesFeatureAndElement) {
  auto it = Pack(Documents({3, 11}), FirstFit(10, 2)).MakeIterator();
  try {
    Drain(*it);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("feature 'tokens' of element 1 has length 11"),
              std::string::npos)
        << e.what();
  }
}

TEST(ConcatThenSplitTest, SplitsAcrossOutputsAndRestores) {
  ConcatThenSplitOptions o;
  o.length_struct = {{"tokens", 4}};
  const IterDataset ds = ConcatThenSplit(Documents({3, 6, 1}), o);
  const std::vector<Value> all = Drain(*ds.MakeIterator());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(Row(all[0], "tokens"), (Ints{0, 1, 2, 100}));
  EXPECT_EQ(Row(all[1], "tokens"), (Ints{101, 102, 103, 104}));
  EXPECT_EQ(Row(all[2], "tokens"), (Ints{105, 200, 0, 0}));
  EXPECT_EQ(Row(all[2], "tokens_segment_ids"), (Ints{1, 2, 0, 0}));
  testing::CheckRestoreAtEveryPosition(ds, "concat-then-split");
}

}  // namespace
}  // namespace spelt
