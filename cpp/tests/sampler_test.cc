// Tests for spelt/sampler.h: EvenSplit, IndexSampler, SequentialSampler and SamplerDataset.
// Values marked "Grain 0.2.18" were computed with Grain 0.2.18 (grain._src.core.sharding.
// even_split, grain.samplers.IndexSampler / SequentialSampler [g].record_key, and
// grain._src.python.data_loader._SamplerMapDataset over RangeDataSource(100, 110, 1)).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/dataset.h"
#include "spelt/sampler.h"
#include "spelt/source.h"
#include "spelt/value.h"

namespace spelt {
namespace {

using Ints = std::vector<int64_t>;

ShardOptions Shard(int64_t index, int64_t count, bool drop_remainder = false) {
  return ShardOptions{index, count, drop_remainder};
}

Ints Keys(const Sampler& s, int64_t n) {
  Ints out;
  for (int64_t g = 0; g < n; ++g) out.push_back(s.RecordKey(g));
  return out;
}

// ---------------------------------------------------------------------------------------
// ShardOptions / EvenSplit
// ---------------------------------------------------------------------------------------

struct EvenSplitCase {
  int64_t n, count;
  bool drop_remainder;
  std::vector<std::pair<int64_t, int64_t>> expected;  // one per shard index
};

TEST(SamplerEvenSplitTest, MatchesGrain) {
  // Grain 0.2.18: [even_split(n, ShardOptions(i, count, drop_remainder)) for i in
  // range(count)].
  const EvenSplitCase kCases[] = {
      {10, 3, false, {{0, 4}, {4, 7}, {7, 10}}},
      {10, 3, true, {{0, 3}, {3, 6}, {6, 9}}},
      {10, 4, false, {{0, 3}, {3, 6}, {6, 8}, {8, 10}}},
      {10, 4, true, {{0, 2}, {2, 4}, {4, 6}, {6, 8}}},
      {7, 7, false, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}}},
      {7, 7, true, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}}},
      {3, 5, false, {{0, 1}, {1, 2}, {2, 3}, {3, 3}, {3, 3}}},
      {3, 5, true, {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}}},
      {100, 6, false, {{0, 17}, {17, 34}, {34, 51}, {51, 68}, {68, 84}, {84, 100}}},
      {100, 6, true, {{0, 16}, {16, 32}, {32, 48}, {48, 64}, {64, 80}, {80, 96}}},
      {0, 2, false, {{0, 0}, {0, 0}}},
      {0, 2, true, {{0, 0}, {0, 0}}},
      {11, 1, false, {{0, 11}}},
      {11, 1, true, {{0, 11}}},
  };
  for (const EvenSplitCase& c : kCases) {
    for (int64_t i = 0; i < c.count; ++i) {
      EXPECT_EQ(EvenSplit(c.n, Shard(i, c.count, c.drop_remainder)),
                c.expected[static_cast<size_t>(i)])
          << "n=" << c.n << " count=" << c.count << " index=" << i
          << " drop_remainder=" << c.drop_remainder;
    }
  }
}

TEST(SamplerEvenSplitTest, ShardsTileTheRange) {
  for (int64_t n : {0, 1, 5, 97, 1000}) {
    for (int64_t count : {1, 2, 3, 7, 16}) {
      int64_t expected_start = 0;
      for (int64_t i = 0; i < count; ++i) {
        auto [start, end] = EvenSplit(n, Shard(i, count));
        EXPECT_EQ(start, expected_start) << n << " " << count << " " << i;
        EXPECT_LE(end - start, n / count + 1);
        EXPECT_GE(end - start, n / count);
        expected_start = end;
      }
      EXPECT_EQ(expected_start, n);
    }
  }
}

TEST(SamplerEvenSplitTest, InvalidShardOptionsThrow) {
  EXPECT_THROW(EvenSplit(10, Shard(3, 3)), std::invalid_argument);
  EXPECT_THROW(EvenSplit(10, Shard(-1, 3)), std::invalid_argument);
  EXPECT_THROW(EvenSplit(10, Shard(0, 0)), std::invalid_argument);
  EXPECT_THROW(Shard(0, -2).Validate(), std::invalid_argument);
  EXPECT_NO_THROW(Shard(2, 3).Validate());
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(SamplerEvenSplitTest, ValidationMessagesMatchGrain) {
  // Grain 0.2.18: str() of the ValueError of ShardOptions(shard_index=..., shard_count=...).
  EXPECT_EQ(ErrorOf([] { Shard(0, 0).Validate(); }),
            "Number of shards must be a positive integer but got 0.");
  EXPECT_EQ(ErrorOf([] { Shard(-1, 0).Validate(); }),
            "Number of shards must be a positive integer but got 0.");
  EXPECT_EQ(ErrorOf([] { Shard(5, 3).Validate(); }),
            "Shard shard_index must be in [0, shard_count - 1], shard_count was 3 and "
            "shard_index was 5.");
  EXPECT_EQ(ErrorOf([] { Shard(-1, 2).Validate(); }),
            "Shard shard_index must be in [0, shard_count - 1], shard_count was 2 and "
            "shard_index was -1.");
}

TEST(SamplerEvenSplitTest, GlobalIndexStridesOverShards) {
  EXPECT_EQ(Shard(0, 1).GlobalIndex(7), 7);
  EXPECT_EQ(Shard(2, 3).GlobalIndex(0), 2);
  EXPECT_EQ(Shard(2, 3).GlobalIndex(4), 14);
}

TEST(SamplerEvenSplitTest, ReprMatchesGrain) {
  EXPECT_EQ(Shard(0, 1).Repr(), "ShardOptions(shard_index=0, shard_count=1, drop_remainder=False)");
  EXPECT_EQ(Shard(2, 4, true).Repr("ShardByJaxProcess"),
            "ShardByJaxProcess(shard_index=2, shard_count=4, drop_remainder=True)");
}

// ---------------------------------------------------------------------------------------
// IndexSampler
// ---------------------------------------------------------------------------------------

TEST(IndexSamplerTest, GoldenShuffled) {
  // Grain 0.2.18: IndexSampler(5, NoSharding(), shuffle=True, num_epochs=2, seed=32).
  IndexSampler s(5, {}, true, 2, 32);
  EXPECT_EQ(s.Length(), 10);
  EXPECT_EQ(Keys(s, 10), (Ints{2, 4, 3, 0, 1, 0, 2, 4, 1, 3}));
}

TEST(IndexSamplerTest, NotShuffled) {
  // Grain 0.2.18: IndexSampler(7, NoSharding(), shuffle=False, num_epochs=2).
  IndexSampler s(7, {}, false, 2);
  EXPECT_EQ(s.Length(), 14);
  EXPECT_EQ(Keys(s, 14), (Ints{0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6}));
}

TEST(IndexSamplerTest, ShuffledThreeEpochs) {
  // Grain 0.2.18: IndexSampler(6, NoSharding(), shuffle=True, num_epochs=3, seed=11).
  IndexSampler s(6, {}, true, 3, 11);
  EXPECT_EQ(s.Length(), 18);
  EXPECT_EQ(Keys(s, 18), (Ints{5, 0, 1, 3, 4, 2, 2, 5, 3, 0, 1, 4, 0, 4, 2, 5, 3, 1}));
}

TEST(IndexSamplerTest, InfiniteEpochs) {
  // Grain 0.2.18: IndexSampler(4, NoSharding(), shuffle=True, num_epochs=None, seed=3),
  // first 12 keys; len() is sys.maxsize.
  IndexSampler s(4, {}, true, std::nullopt, 3);
  EXPECT_EQ(s.Length(), kInfiniteLength);
  EXPECT_EQ(Keys(s, 12), (Ints{2, 3, 0, 1, 1, 0, 2, 3, 1, 0, 2, 3}));
  EXPECT_NO_THROW(s.RecordKey(int64_t{1} << 40));
}

struct ShardedCase {
  int64_t shard_index;
  bool drop_remainder, shuffle;
  int64_t length;
  Ints keys;
};

TEST(IndexSamplerTest, ShardedMatchesGrain) {
  // Grain 0.2.18: IndexSampler(10, ShardOptions(i, 3, drop_remainder), shuffle, num_epochs=2,
  // seed=5 if shuffle); len() and [s[g].record_key for g in range(len(s))].
  const ShardedCase kCases[] = {
      {0, false, true, 20, {1, 1, 1, 0, 0, 0, 2, 2, 2, 3, 3, 3, 2, 2, 2, 1, 1, 1, 0, 0}},
      {0, false, false, 20, {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0, 0, 0, 1, 1, 1, 2, 2}},
      {1, false, true, 20, {5, 5, 5, 4, 4, 4, 6, 6, 6, 6, 6, 6, 5, 5, 5, 4, 4, 4, 6, 6}},
      {1, false, false, 20, {4, 4, 4, 5, 5, 5, 6, 6, 6, 4, 4, 4, 5, 5, 5, 6, 6, 6, 4, 4}},
      {2, false, true, 20, {8, 8, 8, 7, 7, 7, 9, 9, 9, 9, 9, 9, 8, 8, 8, 7, 7, 7, 9, 9}},
      {2, false, false, 20, {7, 7, 7, 8, 8, 8, 9, 9, 9, 7, 7, 7, 8, 8, 8, 9, 9, 9, 7, 7}},
      {0, true, true, 18, {1, 1, 1, 0, 0, 0, 2, 2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0}},
      {0, true, false, 18, {0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 0, 0, 1, 1, 1, 2, 2, 2}},
      {1, true, true, 18, {4, 4, 4, 3, 3, 3, 5, 5, 5, 5, 5, 5, 4, 4, 4, 3, 3, 3}},
      {1, true, false, 18, {3, 3, 3, 4, 4, 4, 5, 5, 5, 3, 3, 3, 4, 4, 4, 5, 5, 5}},
      {2, true, true, 18, {7, 7, 7, 6, 6, 6, 8, 8, 8, 8, 8, 8, 7, 7, 7, 6, 6, 6}},
      {2, true, false, 18, {6, 6, 6, 7, 7, 7, 8, 8, 8, 6, 6, 6, 7, 7, 7, 8, 8, 8}},
  };
  for (const ShardedCase& c : kCases) {
    IndexSampler s(10, Shard(c.shard_index, 3, c.drop_remainder), c.shuffle, 2,
                   c.shuffle ? std::optional<int64_t>(5) : std::nullopt);
    EXPECT_EQ(s.Length(), c.length) << c.shard_index << c.drop_remainder << c.shuffle;
    EXPECT_EQ(Keys(s, c.length), c.keys) << c.shard_index << c.drop_remainder << c.shuffle;
    EXPECT_THROW(s.RecordKey(c.length), std::out_of_range);
    EXPECT_EQ(s.shard_options().shard_index, c.shard_index);
    EXPECT_EQ(s.shard_options().drop_remainder, c.drop_remainder);
  }
}

TEST(IndexSamplerTest, SingleShardOptionsBehaveLikeNoSharding) {
  IndexSampler a(9, Shard(0, 1), true, 2, 77);
  IndexSampler b(9, {}, true, 2, 77);
  EXPECT_EQ(a.Length(), b.Length());
  EXPECT_EQ(Keys(a, 18), Keys(b, 18));
}

TEST(IndexSamplerTest, EveryEpochIsAPermutation) {
  IndexSampler s(50, {}, true, 3, 1234);
  for (int e = 0; e < 3; ++e) {
    std::vector<bool> seen(50, false);
    for (int64_t g = e * 50; g < (e + 1) * 50; ++g) {
      const int64_t k = s.RecordKey(g);
      ASSERT_GE(k, 0);
      ASSERT_LT(k, 50);
      EXPECT_FALSE(seen[static_cast<size_t>(k)]) << "epoch " << e << " key " << k;
      seen[static_cast<size_t>(k)] = true;
    }
  }
  const Ints two_epochs = Keys(s, 100);
  EXPECT_NE(Ints(two_epochs.begin(), two_epochs.begin() + 50),
            Ints(two_epochs.begin() + 50, two_epochs.end()));
}

TEST(IndexSamplerTest, ValidationErrorsMatchGrain) {
  // Grain 0.2.18 raises ValueError for each of these.
  EXPECT_THROW(IndexSampler(0), std::invalid_argument);
  EXPECT_THROW(IndexSampler(-4), std::invalid_argument);
  EXPECT_THROW(IndexSampler(5, {}, /*shuffle=*/true), std::invalid_argument);
  EXPECT_THROW(IndexSampler(5, {}, false, 0), std::invalid_argument);
  EXPECT_THROW(IndexSampler(5, {}, false, -1), std::invalid_argument);
  EXPECT_THROW(IndexSampler(5, {}, true, 1, -1), std::invalid_argument);
  EXPECT_THROW(IndexSampler(5, {}, true, 1, int64_t{1} << 32), std::invalid_argument);
  // Grain also validates the seed when not shuffling.
  EXPECT_THROW(IndexSampler(5, {}, false, 1, -1), std::invalid_argument);
  EXPECT_THROW(IndexSampler(5, Shard(2, 2)), std::invalid_argument);
  EXPECT_THROW(IndexSampler(5, Shard(0, 0)), std::invalid_argument);
  EXPECT_NO_THROW(IndexSampler(5, {}, true, 1, 4294967295LL));
  EXPECT_NO_THROW(IndexSampler(5, {}, false, 1, 0));
}

TEST(IndexSamplerTest, OutOfRangeIndexThrows) {
  // Grain 0.2.18: IndexSampler(5, num_epochs=1)[5] raises IndexError.
  IndexSampler s(5, {}, false, 1);
  EXPECT_EQ(s.RecordKey(4), 4);
  EXPECT_THROW(s.RecordKey(5), std::out_of_range);
  EXPECT_THROW(s.RecordKey(-1), std::out_of_range);
}

TEST(IndexSamplerTest, ValidationMessagesMatchGrainInGrainsOrder) {
  // Grain 0.2.18: str() of IndexSampler(...)'s ValueError; the first failing check wins.
  const std::string kRecords =
      "Invalid number of records in Sampler. Got 0 records, but number of records must be "
      "greater than 0.";
  EXPECT_EQ(ErrorOf([] { IndexSampler(0, {}, true, 0); }), kRecords);
  EXPECT_EQ(ErrorOf([] { IndexSampler(5, {}, true, 0); }),
            "Invalid number of epochs in Index Sampler.Got 0 epochs, but number of epochs must "
            "be greater than 0.");
  EXPECT_EQ(ErrorOf([] { IndexSampler(5, {}, true, 1, std::nullopt); }),
            "Shuffling requires specifying a seed.");
  EXPECT_EQ(ErrorOf([] { IndexSampler(5, {}, true, 1, int64_t{1} << 32); }),
            "Seed should be positive 32-bit integer.");
  EXPECT_EQ(ErrorOf([] { IndexSampler(5, {}, false, std::nullopt, -1); }),
            "Seed should be positive 32-bit integer.");
}

TEST(IndexSamplerTest, LengthOverflowThrows) {
  EXPECT_THROW(IndexSampler(int64_t{1} << 40, {}, false, int64_t{1} << 40), std::overflow_error);
  EXPECT_EQ(IndexSampler(int64_t{1} << 40, {}, false, int64_t{1} << 22).Length(),
            int64_t{1} << 62);
}

TEST(IndexSamplerTest, OutOfRangeMessageMatchesGrain) {
  // Grain 0.2.18: str() of the IndexError of IndexSampler(4, num_epochs=2)[8] and of
  // IndexSampler(4)[-1] (infinite: the bound prints as None).
  EXPECT_EQ(ErrorOf([] { IndexSampler(4, {}, false, 2).RecordKey(8); }),
            "RecordMetadata object index is out of bounds; Got index 8, allowed indices should "
            "be in [0, 8]");
  EXPECT_EQ(ErrorOf([] { IndexSampler(4).RecordKey(-1); }),
            "RecordMetadata object index is out of bounds; Got index -1, allowed indices should "
            "be in [0, None]");
}

TEST(IndexSamplerTest, EmptyShardThrowsEmptyShardError) {
  // Grain 0.2.18: IndexSampler(2, ShardOptions(2, 3), num_epochs=1) has len 2 and its [0]
  // raises ZeroDivisionError; with drop_remainder its len is 0 and [0] raises IndexError.
  IndexSampler keep(2, Shard(2, 3), false, 1);
  EXPECT_EQ(keep.Length(), 2);
  EXPECT_THROW(keep.RecordKey(0), EmptyShardError);
  std::vector<int64_t> keys;
  EXPECT_THROW(keep.RecordKeys(std::vector<int64_t>{0, 1}, &keys), EmptyShardError);
  EXPECT_TRUE(keys.empty());
  IndexSampler drop(2, Shard(2, 3, true), false, 1);
  EXPECT_EQ(drop.Length(), 0);
  EXPECT_THROW(drop.RecordKey(0), std::out_of_range);
}

TEST(IndexSamplerTest, RecordKeysEqualRecordKeyAndStopAtTheFirstBadIndex) {
  IndexSampler s(13, Shard(1, 3), true, 2, 4242);
  Ints indices;
  for (int64_t g = s.Length() - 1; g >= 0; g -= 2) indices.push_back(g);
  Ints keys = {-7};  // appended after what is there
  s.RecordKeys(indices, &keys);
  ASSERT_EQ(keys.size(), indices.size() + 1);
  EXPECT_EQ(keys[0], -7);
  for (size_t i = 0; i < indices.size(); ++i) EXPECT_EQ(keys[i + 1], s.RecordKey(indices[i]));
  keys.clear();
  EXPECT_THROW(s.RecordKeys(Ints{3, 5, s.Length(), 1}, &keys), std::out_of_range);
  EXPECT_EQ(keys, (Ints{s.RecordKey(3), s.RecordKey(5)}));
}

TEST(IndexSamplerTest, RngKeyIsSeedPlusIndex) {
  // Grain 0.2.18: record g's rng is Generator(Philox(key=seed + g)); None without a seed.
  EXPECT_EQ(IndexSampler(5, {}, false, 1, 77).RngKey(3), std::optional<uint64_t>(80));
  EXPECT_EQ(IndexSampler(5, {}, true, std::nullopt, 4294967295LL).RngKey(int64_t{1} << 62),
            std::optional<uint64_t>(4294967295ULL + (uint64_t{1} << 62)));
  EXPECT_EQ(IndexSampler(5).RngKey(3), std::nullopt);
}

// ---------------------------------------------------------------------------------------
// SequentialSampler
// ---------------------------------------------------------------------------------------

TEST(SequentialSamplerTest, KeysAreIndices) {
  SequentialSampler s(10);
  EXPECT_EQ(s.Length(), 10);
  EXPECT_EQ(Keys(s, 10), (Ints{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_THROW(s.RecordKey(10), std::out_of_range);
  EXPECT_THROW(s.RecordKey(-1), std::out_of_range);
}

TEST(SequentialSamplerTest, ShardedLengthMatchesGrain) {
  // Grain 0.2.18: SequentialSampler(10, ShardOptions(1, 3, drop_remainder)) has 10 indices
  // without drop_remainder and 9 with it; record_key(g) == g.
  SequentialSampler keep(10, Shard(1, 3, false));
  EXPECT_EQ(keep.Length(), 10);
  EXPECT_EQ(Keys(keep, 3), (Ints{0, 1, 2}));
  SequentialSampler drop(10, Shard(1, 3, true));
  EXPECT_EQ(drop.Length(), 9);
  EXPECT_EQ(drop.RecordKey(8), 8);
  EXPECT_THROW(drop.RecordKey(9), std::out_of_range);
  EXPECT_EQ(drop.shard_options().shard_count, 3);
}

TEST(SequentialSamplerTest, ValidationErrors) {
  EXPECT_THROW(SequentialSampler(0), std::invalid_argument);
  EXPECT_THROW(SequentialSampler(-1), std::invalid_argument);
  EXPECT_THROW(SequentialSampler(5, Shard(5, 5)), std::invalid_argument);
}

TEST(SequentialSamplerTest, RngKeyIsSeedPlusIndexAndRejectsNegativeKeys) {
  // Grain 0.2.18 does not check SequentialSampler's seed; numpy's Philox rejects a negative
  // key seed + g when record g is read.
  EXPECT_EQ(SequentialSampler(5, {}, 9).RngKey(4), std::optional<uint64_t>(13));
  EXPECT_EQ(SequentialSampler(5).RngKey(4), std::nullopt);
  SequentialSampler negative(5, {}, -2);
  EXPECT_THROW(negative.RngKey(1), std::invalid_argument);
  EXPECT_EQ(negative.RngKey(2), std::optional<uint64_t>(0));
  EXPECT_EQ(SequentialSampler(5, {}, INT64_MAX).RngKey(INT64_MAX),
            std::optional<uint64_t>(UINT64_MAX - 1));
}

TEST(SequentialSamplerTest, OutOfRangeMessageMatchesGrain) {
  // Grain 0.2.18: str() of the IndexError of SequentialSampler(3)[3].
  EXPECT_EQ(ErrorOf([] { SequentialSampler(3).RecordKey(3); }),
            "RecordMetadata object index is out of bounds; Got index 3, allowed indices should "
            "be in [0, 3]");
}

// ---------------------------------------------------------------------------------------
// SamplerDataset
// ---------------------------------------------------------------------------------------

std::shared_ptr<const RandomAccessSource> Records100To110() {
  return std::make_shared<RangeSource>(100, 110, 1);
}

Ints Elements(const MapDataset& ds) {
  Ints out;
  for (int64_t l = 0; l < ds.Length(); ++l) out.push_back(ds.Get(l)->AsInt());
  return out;
}

TEST(SamplerDatasetTest, ShardedIndexSamplerMatchesGrain) {
  // Grain 0.2.18: so = ShardOptions(i, 3, drop_remainder);
  // _SamplerMapDataset(RangeDataSource(100, 110, 1), IndexSampler(10, so, True, 2, 5), so).
  const Ints kExpected[2][3] = {
      {{101, 100, 102, 103, 102, 101}, {105, 104, 106, 106, 105, 104},
       {108, 107, 109, 109, 108, 107}},
      {{101, 100, 102, 102, 101, 100}, {104, 103, 105, 105, 104, 103},
       {107, 106, 108, 108, 107, 106}},
  };
  for (int dr = 0; dr < 2; ++dr) {
    for (int64_t i = 0; i < 3; ++i) {
      const ShardOptions so = Shard(i, 3, dr == 1);
      auto sampler = std::make_shared<IndexSampler>(10, so, true, 2, 5);
      MapDataset ds = SamplerDataset(sampler, Records100To110(), so);
      // Without drop_remainder the first 20 % 3 shards read one more index (Grain after
      // 0.2.18, grain@5bad1a2: nothing lost); the first six are Grain 0.2.18's.
      const int64_t extra = dr == 0 && i < sampler->Length() % 3;
      EXPECT_EQ(ds.Length(), sampler->Length() / 3 + extra);
      const Ints got = Elements(ds);
      EXPECT_EQ(Ints(got.begin(), got.begin() + 6), kExpected[dr][i])
          << "drop_remainder=" << dr << " shard " << i;
    }
  }
}

TEST(SamplerDatasetTest, ElementLReadsKeyOfLTimesSPlusS) {
  // An unsharded sampler of 39 indices read by 4 hosts: host s reads g = l * 4 + s.
  auto sampler = std::make_shared<IndexSampler>(13, ShardOptions{}, true, 3, 99);
  auto source = std::make_shared<RangeSource>(1000, 1013, 1);
  for (int64_t s = 0; s < 4; ++s) {
    MapDataset ds = SamplerDataset(sampler, source, Shard(s, 4));
    EXPECT_EQ(ds.Length(), 39 / 4 + (s < 39 % 4));  // every index read by one host
    for (int64_t l = 0; l < ds.Length(); ++l) {
      EXPECT_EQ(ds.Get(l)->AsInt(), 1000 + sampler->RecordKey(l * 4 + s)) << s << " " << l;
    }
  }
}

TEST(SamplerDatasetTest, SequentialSamplerMatchesGrain) {
  // Grain 0.2.18: so = ShardOptions(1, 3); _SamplerMapDataset(RangeDataSource(100, 110, 1),
  // SequentialSampler(10, so), so) -> [101, 104, 107].
  const ShardOptions so = Shard(1, 3);
  MapDataset ds =
      SamplerDataset(std::make_shared<SequentialSampler>(10, so), Records100To110(), so);
  EXPECT_EQ(ds.Length(), 3);
  EXPECT_EQ(Elements(ds), (Ints{101, 104, 107}));
  // Grain 0.2.18: so = ShardOptions(2, 4, drop_remainder=True): len(sampler) == 8,
  // elements [102, 106].
  const ShardOptions so2 = Shard(2, 4, true);
  auto sampler2 = std::make_shared<SequentialSampler>(10, so2);
  EXPECT_EQ(sampler2->Length(), 8);
  MapDataset ds2 = SamplerDataset(sampler2, Records100To110(), so2);
  EXPECT_EQ(ds2.Length(), 2);
  EXPECT_EQ(Elements(ds2), (Ints{102, 106}));
}

TEST(SamplerDatasetTest, ComposesWithToIterAndCheckpoints) {
  const ShardOptions so = Shard(1, 2);
  auto sampler = std::make_shared<IndexSampler>(10, so, true, 3, 7);
  MapDataset ds = SamplerDataset(sampler, Records100To110(), so);
  Ints expected = Elements(ds);
  ASSERT_EQ(expected.size(), static_cast<size_t>(sampler->Length() / 2));
  for (ReadOptions o : {ReadOptions{0, 0}, ReadOptions{4, 6}}) {
    auto it = ds.ToIter(o).MakeIterator();
    Ints got;
    for (int i = 0; i < 4; ++i) got.push_back(it->Next()->AsInt());
    auto restored = ds.ToIter(o).MakeIterator();
    restored->SetState(it->GetState());
    while (std::optional<Value> v = restored->Next()) got.push_back(v->AsInt());
    EXPECT_EQ(got, expected);
  }
}

TEST(SamplerDatasetTest, InvalidArgumentsThrow) {
  auto sampler = std::make_shared<SequentialSampler>(10);
  EXPECT_THROW(SamplerDataset(nullptr, Records100To110(), {}), std::invalid_argument);
  EXPECT_THROW(SamplerDataset(sampler, nullptr, {}), std::invalid_argument);
  EXPECT_THROW(SamplerDataset(sampler, Records100To110(), Shard(3, 2)), std::invalid_argument);
}

TEST(SamplerDatasetTest, SourceErrorPropagates) {
  // Sampler keys beyond the source's records: the source's out_of_range reaches the caller.
  auto sampler = std::make_shared<SequentialSampler>(12);
  MapDataset ds = SamplerDataset(sampler, Records100To110(), {});
  EXPECT_EQ(ds.Length(), 12);
  EXPECT_EQ(ds.Get(9)->AsInt(), 109);
  EXPECT_THROW(ds.Get(10), std::out_of_range);
}

// A source that counts its calls and fails at one record.
class CountingSource final : public RandomAccessSource {
 public:
  explicit CountingSource(int64_t length, int64_t bad = -1) : length_(length), bad_(bad) {}
  int64_t Length() const override { return length_; }
  Value Get(int64_t index) const override {
    ++gets;
    if (index == bad_) throw std::runtime_error("bad record " + std::to_string(index));
    return Value(1000 + index);
  }
  // The batched read, with the exact-prefix contract of RandomAccessSource::GetMany.
  void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const override {
    ++get_manys;
    for (int64_t i : indices) {
      if (i == bad_) throw std::runtime_error("bad record " + std::to_string(i));
      out->push_back(Value(1000 + i));
    }
  }
  std::string Repr() const override { return "CountingSource"; }
  mutable int gets = 0, get_manys = 0;

 private:
  int64_t length_, bad_;
};

Ints AsInts(const std::vector<std::optional<Value>>& values) {
  Ints out;
  for (const auto& v : values) out.push_back(v->AsInt());
  return out;
}

TEST(SamplerDatasetTest, GetManyReadsAChunkWithOneSourceCall) {
  const ShardOptions so = Shard(1, 2);
  auto sampler = std::make_shared<IndexSampler>(20, so, true, 2, 3);
  auto source = std::make_shared<CountingSource>(20);
  MapDataset ds = SamplerDataset(sampler, source, so);
  Ints indices = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<std::optional<Value>> out;
  ds.node()->GetMany(indices, &out);
  EXPECT_EQ(source->get_manys, 1);
  EXPECT_EQ(source->gets, 0);
  Ints expected;
  for (int64_t l : indices) expected.push_back(1000 + sampler->RecordKey(l * 2 + 1));
  EXPECT_EQ(AsInts(out), expected);
  for (int64_t l : indices) EXPECT_EQ(ds.Get(l)->AsInt(), expected[static_cast<size_t>(l)]);
}

TEST(SamplerDatasetTest, GetManyKeepsTheRecordsBeforeASamplerError) {
  // 5 sampler indices read by one host: local index 5 is out of the sampler's range.
  auto sampler = std::make_shared<SequentialSampler>(5);
  MapDataset ds = SamplerDataset(sampler, std::make_shared<CountingSource>(10), {});
  std::vector<std::optional<Value>> out;
  EXPECT_THROW(ds.node()->GetMany(Ints{3, 4, 5, 2}, &out), std::out_of_range);
  EXPECT_EQ(AsInts(out), (Ints{1003, 1004}));
}

TEST(SamplerDatasetTest, GetManyKeepsTheRecordsBeforeASourceError) {
  // Record 3 fails: the error is Get()'s for it, after the records before it; an earlier
  // source error wins over a later sampler error.
  auto sampler = std::make_shared<SequentialSampler>(6);
  auto source = std::make_shared<CountingSource>(10, /*bad=*/3);
  MapDataset ds = SamplerDataset(sampler, source, {});
  std::vector<std::optional<Value>> out;
  EXPECT_EQ(ErrorOf([&] { ds.node()->GetMany(Ints{1, 2, 3, 4, 9}, &out); }), "bad record 3");
  EXPECT_EQ(AsInts(out), (Ints{1001, 1002}));
}

}  // namespace
}  // namespace spelt
