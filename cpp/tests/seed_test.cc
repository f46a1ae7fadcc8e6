// Tests for Seed() and default-seed derivation (ops/with_options.cc, DatasetNode::DefaultSeed). Expected values marked "Grain 0.2.18" were computed with
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
#include "spelt/seeds.h"
#include "spelt/source.h"
#include "spelt/value.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

TEST(MapDatasetSeedTest, DerivedSeedsMatchGrain) {
  // Grain 0.2.18: list(...) of each pipeline.
  EXPECT_EQ(GetInts(MapDataset::Range(10).Seed(42).Shuffle().Seed(7).Shuffle(), 10),
            (Ints{5, 2, 1, 3, 0, 6, 8, 4, 9, 7}));
  EXPECT_EQ(GetInts(MapDataset::Range(10).Seed(42).Shuffle().Shuffle(), 10),
            (Ints{2, 3, 1, 9, 4, 0, 5, 6, 8, 7}));
  EXPECT_EQ(GetInts(MapDataset::Range(10).Seed(42).Map([](Value v) { return v; }).Shuffle(), 10),
            (Ints{9, 8, 0, 3, 6, 4, 7, 2, 5, 1}));
  EXPECT_EQ(GetInts(MapDataset::Range(10).Shuffle(1).Seed(42).Shuffle(), 10),
            (Ints{7, 2, 9, 3, 5, 1, 4, 8, 0, 6}));
}

TEST(MapDatasetSeedTest, DefaultSeedIsForANodeOnTop) {
  // DefaultSeed() of a node is the seed Grain derives for a transformation placed on top of
  // it. Grain 0.2.18: MapDataset.range(10).seed(42).shuffle()._default_seed == 3329053876
  // (SeedSequence([42, 1])), and with a map in between 955475868 (SeedSequence([42, 2])).
  EXPECT_EQ(MapDataset::Range(10).Seed(42).node()->DefaultSeed(), 3329053876u);
  EXPECT_EQ(MapDataset::Range(10).Seed(42).Map([](Value v) { return v; }).node()->DefaultSeed(),
            955475868u);
  EXPECT_EQ(MapDataset::Range(10).node()->DefaultSeed(), std::nullopt);
  // The nearest seed hides seeds further up.
  EXPECT_EQ(MapDataset::Range(10).Seed(1).Shuffle().Seed(42).node()->DefaultSeed(), 3329053876u);
}

TEST(MapDatasetSeedTest, SeedIsAPassThrough) {
  MapDataset ds = MapDataset::Range(3, 9).Seed(5);
  EXPECT_EQ(ds.Length(), 6);
  EXPECT_EQ(GetInts(ds, 8), (Ints{3, 4, 5, 6, 7, 8, 3, 4}));
}

TEST(MapDatasetSeedTest, ExplicitSeedWinsOverDefault) {
  EXPECT_EQ(GetInts(MapDataset::Range(7).Seed(42).Shuffle(5), 7),
            GetInts(MapDataset::Range(7).Shuffle(5), 7));
}

TEST(IterOpsTest, SeedIsAPassThrough) {
  auto it = RangeIter(4).Seed(7).MakeIterator();
  EXPECT_EQ(it->Next()->AsInt(), 0);
  EXPECT_EQ(it->GetState(), State({{"next_index", 1}}));
  EXPECT_EQ(AsInts(Drain(*it)), (Ints{1, 2, 3}));
}

TEST(IterOpsTest, WithOptionsIsALevelOfTheDerivation) {
  // Grain 0.2.18, ds = MapDataset.range(10).seed(7).to_iter_dataset(): a transformation on
  // top of ds derives 1009178997 (SeedSequence([7, 2])), and on top of
  // WithOptionsIterDataset(ds, DatasetOptions()) 3466196061 (SeedSequence([7, 3])).
  IterDataset ds = MapDataset::Range(10).Seed(7).ToIter();
  EXPECT_EQ(ds.node()->DefaultSeed(), 1009178997u);
  EXPECT_EQ(ds.WithOptions().node()->DefaultSeed(), 3466196061u);
  // Otherwise a pass-through, batched read-ahead included.
  IterDataset threaded = MapDataset::Range(10).ToIter(ReadOptions{2, 4});
  auto it = threaded.WithOptions().Batch(4).MakeIterator();
  EXPECT_EQ(Drain(*it).size(), 3u);
  EXPECT_EQ(it->GetState(), State({{"next_index", 10}}));
}

TEST(IterOpsTest, AStreamOfAMapDatasetIsNoLevel) {
  // Grain 0.2.18 reads a MapDataset parent of an IterDataset operation directly:
  // LimitIterDataset(MapDataset.range(8).seed(3), 5) derives SeedSequence([3, 2]) for a
  // transformation on top, as a MapDataset op would; to_iter_dataset() adds a level.
  MapDataset seeded = MapDataset::Range(8).Seed(3);
  EXPECT_EQ(seeded.AsStream().Limit(5).node()->DefaultSeed(),
            seeded.Map([](Value v) { return v; }).node()->DefaultSeed());
  EXPECT_NE(seeded.ToIter().Limit(5).node()->DefaultSeed(),
            seeded.AsStream().Limit(5).node()->DefaultSeed());
  EXPECT_EQ(DrainInts(*seeded.AsStream().Limit(5).MakeIterator()), (Ints{0, 1, 2, 3, 4}));
}

TEST(ParseAnySeedTest, SplitsDecimalIntoWordsAsNumpy) {
  using Words = std::vector<uint32_t>;
  EXPECT_EQ(ParseAnySeed("0", "seed").words(), Words({0}));
  EXPECT_EQ(ParseAnySeed("4294967295", "seed").words(), Words({0xFFFFFFFFu}));
  EXPECT_EQ(ParseAnySeed("4294967296", "seed").words(), Words({0, 1}));
  // 2**100 + 7
  EXPECT_EQ(ParseAnySeed("1267650600228229401496703205383", "seed").words(),
            Words({7, 0, 0, 16}));
  EXPECT_EQ(ParseAnySeed("893247023984", "seed").words(), AnySeed(int64_t{893247023984}).words());
}

TEST(ParseAnySeedTest, NegativeOrNonDecimalThrowsNamingWhat) {
  auto message = [](const char* decimal, const char* what) {
    try {
      ParseAnySeed(decimal, what);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("-1", "random_map"), "random_map: seed must be non-negative, got -1");
  EXPECT_EQ(message("-18446744073709551616", "seed"),
            "seed: seed must be non-negative, got -18446744073709551616");
  EXPECT_EQ(message("", "seed"), "seed: seed must be an integer, got ''");
  EXPECT_EQ(message("1.5", "seed"), "seed: seed must be an integer, got '1.5'");
}

}  // namespace
}  // namespace spelt
