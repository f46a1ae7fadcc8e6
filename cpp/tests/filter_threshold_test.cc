// Tests for the filter thresholds of spelt/dataset_options.h (exec/filter_threshold.cc).
#include <gtest/gtest.h>

#include "spelt/dataset_options.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

bool KeepNone(const Value&) { return false; }
bool KeepOneInTen(const Value& v) { return v.AsInt() % 10 == 0; }

TEST(FilterThresholdTest, RaisesAtTheEndOfAWindowWithGrainsMessage) {
  DatasetOptions options;
  options.filter_raise_threshold_ratio = 0.999;
  auto it = MakeIterator(RangeIter(1000).Filter(KeepNone, "KeepNone"), options);
  try {
    it->Next();
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "Transformation FilterDatasetIterator(transform=KeepNone) skipped 100.00 % of "
                 "the last seen 1000 elements. Please check the filtering logic. If this is "
                 "intended, consider pre-filtering the input dataset before training. To disable "
                 "this check, set `grain.experimental.DatasetOptions.filter_raise_threshold_ratio`"
                 " used in `WithOptionsIterDataset` to `None`.");
  }
  // 999 elements are not a full window: no check.
  EXPECT_FALSE(MakeIterator(RangeIter(999).Filter(KeepNone), options)->Next().has_value());
}

TEST(FilterThresholdTest, WarnsForMapDatasetFiltersSkippedByToIter) {
  std::vector<std::string> warnings;
  DatasetOptions options;
  options.warn = [&](const std::string& m) { warnings.push_back(m); };
  auto it = MakeIterator(MapDataset::Range(2000).Filter(KeepOneInTen).ToIter(Serial()), options);
  EXPECT_EQ(Drain(*it).size(), 200u);
  ASSERT_EQ(warnings.size(), 2u);  // a given sink gets every window's warning
  EXPECT_EQ(warnings[0].substr(0, 141),
            "Transformation PrefetchDatasetIterator(read_options=ReadOptions(num_threads=0, "
            "prefetch_buffer_size=0), allow_nones=False) skipped 90.00 % of");
  options.filter_raise_threshold_ratio = 0.9;
  auto raising = MakeIterator(MapDataset::Range(2000).Filter(KeepOneInTen).ToIter(), options);
  EXPECT_THROW(Drain(*raising), std::invalid_argument);
}

TEST(FilterThresholdTest, InterleavedDatasetsCheckTheOptionsOfTheInterleave) {
  // Their iterators are made later, in Next(), or ahead on threads of their own.
  DatasetOptions options;
  options.filter_raise_threshold_ratio = 0.5;
  for (int64_t make_ahead_threads : {0, 1}) {
    std::vector<IterDataset> filtered;
    for (int i = 0; i < 3; ++i) filtered.push_back(RangeIter(2000).Filter(KeepOneInTen));
    IterDataset::InterleaveOptions interleave;
    interleave.cycle_length = 2;
    interleave.num_make_iter_threads = make_ahead_threads;
    IterDataset ds = IterDataset::Interleave(filtered, interleave);
    EXPECT_THROW(Drain(*MakeIterator(ds, options)), std::invalid_argument) << make_ahead_threads;
    EXPECT_EQ(Drain(*ds.MakeIterator()).size(), 600u);  // the defaults only warn
  }
}

TEST(FilterThresholdTest, ThresholdsAPipelineSetsForItselfOverrideTheIterators) {
  FilterThresholds raise_half;
  raise_half.filter_raise_threshold_ratio = 0.5;
  IterDataset own = WithFilterThresholds(RangeIter(2000).Filter(KeepOneInTen), raise_half);
  EXPECT_THROW(Drain(*own.MakeIterator()), std::invalid_argument);
  IterDataset::InterleaveOptions interleave;
  interleave.cycle_length = 1;
  EXPECT_THROW(Drain(*IterDataset::Interleave({own}, interleave).MakeIterator()),
               std::invalid_argument);
  // Fields it does not set are the iterator's: a disabled warning stays disabled.
  DatasetOptions quiet;
  quiet.filter_warn_threshold_ratio = std::nullopt;
  quiet.warn = [](const std::string&) { FAIL() << "warned"; };
  FilterThresholds raise_never;
  raise_never.filter_raise_threshold_ratio = std::optional<double>();
  EXPECT_EQ(Drain(*MakeIterator(
                      WithFilterThresholds(RangeIter(2000).Filter(KeepOneInTen), raise_never),
                      quiet))
                .size(),
            200u);
}

TEST(FilterThresholdTest, DisabledThresholdsAndPassingFilters) {
  DatasetOptions off;
  off.filter_warn_threshold_ratio = std::nullopt;
  off.filter_raise_threshold_ratio = 0.0;  // Grain's `or inf`: 0 disables too
  EXPECT_FALSE(MakeIterator(RangeIter(3000).Filter(KeepNone), off)->Next().has_value());
  DatasetOptions strict;
  strict.filter_raise_threshold_ratio = 0.5;
  auto keep_two_in_three = [](const Value& v) { return v.AsInt() % 3 != 0; };
  EXPECT_EQ(Drain(*MakeIterator(RangeIter(3000).Filter(keep_two_in_three), strict)).size(),
            2000u);
  // The ratio is compared with >=, as in Grain: half skipped reaches 0.5.
  auto keep_half = [](const Value& v) { return v.AsInt() % 2 == 0; };
  EXPECT_THROW(Drain(*MakeIterator(RangeIter(3000).Filter(keep_half), strict)),
               std::invalid_argument);
}

}  // namespace
}  // namespace spelt
