// Tests for spelt/random.h. Golden values come from the reference implementations:
// Grain 0.2.18 (index_shuffle_module.index_shuffle) and numpy 2.4.6 (SeedSequence, Philox).
#include "spelt/random.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace spelt {
namespace {

// ---------------------------------------------------------------------------------------
// IndexShuffle
// ---------------------------------------------------------------------------------------

struct ShuffleCase {
  uint64_t index;
  uint64_t max_index;
  uint32_t seed;
  uint32_t rounds;
  uint64_t expected;
};

TEST(IndexShuffleTest, MatchesGrain) {
  // From grain 0.2.18: index_shuffle(index=, max_index=, seed=, rounds=). Rounds 4..1024
  // exercise every branch of std::seed_seq's key schedule.
  const ShuffleCase kCases[] = {
      {0u, 1u, 0u, 4u, 0u},
      {1u, 1u, 0u, 4u, 1u},
      {0u, 1u, 42u, 4u, 0u},
      {1u, 1u, 42u, 4u, 1u},
      {0u, 1u, 3329053876u, 4u, 1u},
      {1u, 1u, 3329053876u, 4u, 0u},
      {0u, 9u, 0u, 4u, 0u},
      {1u, 9u, 0u, 4u, 4u},
      {4u, 9u, 0u, 4u, 8u},
      {9u, 9u, 0u, 4u, 2u},
      {0u, 9u, 42u, 4u, 8u},
      {1u, 9u, 42u, 4u, 6u},
      {4u, 9u, 42u, 4u, 0u},
      {9u, 9u, 42u, 4u, 3u},
      {0u, 9u, 3329053876u, 4u, 1u},
      {1u, 9u, 3329053876u, 4u, 7u},
      {4u, 9u, 3329053876u, 4u, 0u},
      {9u, 9u, 3329053876u, 4u, 2u},
      {0u, 1000u, 0u, 4u, 134u},
      {1u, 1000u, 0u, 4u, 133u},
      {500u, 1000u, 0u, 4u, 826u},
      {1000u, 1000u, 0u, 4u, 777u},
      {0u, 1000u, 42u, 4u, 394u},
      {1u, 1000u, 42u, 4u, 591u},
      {500u, 1000u, 42u, 4u, 372u},
      {1000u, 1000u, 42u, 4u, 136u},
      {0u, 1000u, 3329053876u, 4u, 275u},
      {1u, 1000u, 3329053876u, 4u, 749u},
      {500u, 1000u, 3329053876u, 4u, 653u},
      {1000u, 1000u, 3329053876u, 4u, 780u},
      {0u, 46204u, 42u, 4u, 43043u},
      {23102u, 46204u, 42u, 4u, 8525u},
      {46204u, 46204u, 42u, 4u, 29107u},
      {1u, 46204u, 3329053876u, 4u, 28191u},
      {46204u, 46204u, 3329053876u, 4u, 42445u},
      {0u, 1048581u, 42u, 4u, 330049u},
      {524290u, 1048581u, 42u, 4u, 561832u},
      {1048581u, 1048581u, 42u, 4u, 828979u},
      {1u, 1048581u, 3329053876u, 4u, 12732u},
      {1048581u, 1048581u, 3329053876u, 4u, 485664u},
      {0u, 1099511627775u, 42u, 4u, 168672032994u},
      {549755813887u, 1099511627775u, 42u, 4u, 356894610603u},
      {1099511627775u, 1099511627775u, 42u, 4u, 940733206555u},
      {1u, 1099511627775u, 3329053876u, 4u, 332316891751u},
      {1099511627775u, 1099511627775u, 3329053876u, 4u, 122720116601u},
      {0u, 1099511627777u, 42u, 4u, 338708028980u},
      {549755813888u, 1099511627777u, 42u, 4u, 888468561436u},
      {1099511627777u, 1099511627777u, 42u, 4u, 763022586297u},
      {1u, 1099511627777u, 3329053876u, 4u, 634430489536u},
      {1099511627777u, 1099511627777u, 3329053876u, 4u, 819683624777u},
      {0u, 2199023255552u, 42u, 4u, 338708028980u},
      {1099511627776u, 2199023255552u, 42u, 4u, 1438751284332u},
      {2199023255552u, 2199023255552u, 42u, 4u, 253358909214u},
      {1u, 2199023255552u, 3329053876u, 4u, 634430489536u},
      {2199023255552u, 2199023255552u, 3329053876u, 4u, 75449342142u},
      {0u, 1234567891u, 42u, 4u, 983762643u},
      {617283945u, 1234567891u, 42u, 4u, 98354172u},
      {1234567891u, 1234567891u, 42u, 4u, 57596390u},
      {1u, 1234567891u, 3329053876u, 4u, 275108725u},
      {1234567891u, 1234567891u, 3329053876u, 4u, 1123528949u},
      {0u, 9223372036854775807u, 42u, 4u, 8485456381694082302u},
      {4611686018427387903u, 9223372036854775807u, 42u, 4u, 656735732614018608u},
      {9223372036854775807u, 9223372036854775807u, 42u, 4u, 5268421759631340576u},
      {1u, 9223372036854775807u, 3329053876u, 4u, 2780010215407484048u},
      {9223372036854775807u, 9223372036854775807u, 3329053876u, 4u, 4644016267211989530u},
      {0u, 6768574230975169895u, 42u, 4u, 4562001650953824426u},
      {3384287115487584947u, 6768574230975169895u, 42u, 4u, 316730305993891952u},
      {6768574230975169895u, 6768574230975169895u, 42u, 4u, 6577467214227431192u},
      {1u, 6768574230975169895u, 3329053876u, 4u, 2780010215407484048u},
      {6768574230975169895u, 6768574230975169895u, 3329053876u, 4u, 5569638810533619952u},
      {0u, 1000u, 7u, 6u, 303u},
      {1000u, 1000u, 7u, 6u, 353u},
      {3u, 1099511627777u, 4294967295u, 6u, 267295859340u},
      {1099511627777u, 1099511627777u, 4294967295u, 6u, 40478859472u},
      {0u, 1000u, 7u, 8u, 603u},
      {1000u, 1000u, 7u, 8u, 806u},
      {3u, 1099511627777u, 4294967295u, 8u, 823498645536u},
      {1099511627777u, 1099511627777u, 4294967295u, 8u, 718458123082u},
      {0u, 1000u, 7u, 40u, 299u},
      {1000u, 1000u, 7u, 40u, 563u},
      {3u, 1099511627777u, 4294967295u, 40u, 621470765791u},
      {1099511627777u, 1099511627777u, 4294967295u, 40u, 980470541296u},
      {0u, 1000u, 7u, 100u, 807u},
      {1000u, 1000u, 7u, 100u, 945u},
      {3u, 1099511627777u, 4294967295u, 100u, 889503169690u},
      {1099511627777u, 1099511627777u, 4294967295u, 100u, 719377666298u},
      {0u, 1000u, 7u, 1024u, 358u},
      {1000u, 1000u, 7u, 1024u, 927u},
      {3u, 1099511627777u, 4294967295u, 1024u, 13197300090u},
      {1099511627777u, 1099511627777u, 4294967295u, 1024u, 454969141068u},
  };
  for (const ShuffleCase& c : kCases) {
    EXPECT_EQ(IndexShuffle(c.index, c.max_index, c.seed, c.rounds), c.expected)
        << "index=" << c.index << " max_index=" << c.max_index << " seed=" << c.seed
        << " rounds=" << c.rounds;
  }
}

TEST(IndexShuffleTest, SingleElement) {
  EXPECT_EQ(IndexShuffle(0, 0, 0), 0u);
  EXPECT_EQ(IndexShuffle(0, 0, 123456, 1024), 0u);
}

TEST(IndexShuffleTest, ManyEqualsOneAtATime) {
  // Block sizes from the smallest (16 bits) to the largest (64), cycles of every length, runs
  // that are not a multiple of the lanes, and the most rounds.
  const uint64_t max_indices[] = {0,       1,       9,          65535,       65536,
                                  69999,   1 << 20, (1u << 31) + 5, uint64_t{1} << 40,
                                  ~uint64_t{0} >> 3, ~uint64_t{0}};
  for (const uint64_t max_index : max_indices) {
    for (const uint32_t rounds : {4u, 6u, 1024u}) {
      std::vector<uint64_t> indices;
      for (uint64_t i = 0; i < 37 && i <= max_index; ++i) {
        indices.push_back(max_index < 37 ? i : max_index - i * (max_index / 37));
      }
      std::vector<uint64_t> out(indices.size());
      IndexShuffleMany(indices, max_index, 7 + rounds, out, rounds);
      for (size_t i = 0; i < indices.size(); ++i) {
        ASSERT_EQ(out[i], IndexShuffle(indices[i], max_index, 7 + rounds, rounds))
            << "index " << indices[i] << " max_index " << max_index << " rounds " << rounds;
      }
    }
  }
  std::vector<uint64_t> out(2);
  EXPECT_THROW(IndexShuffleMany(std::vector<uint64_t>{1, 10}, 9, 0, out), std::invalid_argument);
  EXPECT_THROW(IndexShuffleMany(std::vector<uint64_t>{1}, 9, 0, out), std::invalid_argument);
}

TEST(IndexShuffleTest, GrainDatasetShuffle) {
  // grain MapDataset.range(10).seed(42).shuffle() shuffles with seed 3329053876.
  const std::vector<uint64_t> expected = {1, 7, 6, 9, 0, 8, 4, 5, 3, 2};
  std::vector<uint64_t> got;
  for (uint64_t i = 0; i < 10; ++i) got.push_back(IndexShuffle(i, 9, 3329053876u));
  EXPECT_EQ(got, expected);
}

TEST(IndexShuffleTest, GrainIndexSampler) {
  // grain IndexSampler(num_records=5, shuffle=True, num_epochs=2, seed=32): epoch e uses
  // seed 32 + e.
  const std::vector<uint64_t> expected_epoch0 = {2, 4, 3, 0, 1};
  const std::vector<uint64_t> expected_epoch1 = {0, 2, 4, 1, 3};
  std::vector<uint64_t> epoch0, epoch1;
  for (uint64_t i = 0; i < 5; ++i) {
    epoch0.push_back(IndexShuffle(i, 4, 32));
    epoch1.push_back(IndexShuffle(i, 4, 33));
  }
  EXPECT_EQ(epoch0, expected_epoch0);
  EXPECT_EQ(epoch1, expected_epoch1);
}

// Asserts that IndexShuffle(., max_index, seed) permutes [0, max_index].
void ExpectPermutation(uint64_t max_index, uint32_t seed) {
  std::vector<bool> seen(max_index + 1, false);
  for (uint64_t i = 0; i <= max_index; ++i) {
    const uint64_t j = IndexShuffle(i, max_index, seed);
    ASSERT_LE(j, max_index) << "index " << i;
    ASSERT_FALSE(seen[j]) << "duplicate output " << j << " for index " << i;
    seen[j] = true;
  }
}

TEST(IndexShuffleTest, PermutationOf46205) { ExpectPermutation(46204, 52); }

TEST(IndexShuffleTest, PermutationAtPowerOfTwo) {
  // max_index = 2^16: Grain's block is 16 bits, too small for 65,537 elements, and its map
  // hits only 65,536 distinct values. Spelt widens the block and stays a permutation.
  ExpectPermutation(65536, 0);
  ExpectPermutation(65536, 52);
}

TEST(IndexShuffleTest, DistinctAtLargePowersOfTwo) {
  // Grain maps index 2^40 and 0 to the same value for max_index 2^40 (734920543079 with
  // seed 3), and likewise 2^52 + 1 and 1 for max_index 2^52 + 1 (log2 of the double rounds
  // to 52). Spelt keeps them distinct.
  const uint64_t p40 = uint64_t{1} << 40;
  EXPECT_NE(IndexShuffle(p40, p40, 3), IndexShuffle(0, p40, 3));
  const uint64_t m52 = (uint64_t{1} << 52) + 1;
  EXPECT_NE(IndexShuffle(m52, m52, 3), IndexShuffle(1, m52, 3));
  EXPECT_LE(IndexShuffle(p40, p40, 3), p40);
  EXPECT_LE(IndexShuffle(m52, m52, 3), m52);
}

TEST(IndexShuffleTest, FullUint64Range) {
  // Grain's binding stops at 2^63 - 1; both that and 2^64 - 1 use the 64-bit block, so one
  // cipher step that lands in [0, 2^63) is the answer for both.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  constexpr uint64_t kMax63 = kMax >> 1;
  int checked = 0;
  for (uint64_t i = 0; i < 64; ++i) {
    const uint64_t full = IndexShuffle(i, kMax, 42);
    if (full <= kMax63) {
      EXPECT_EQ(IndexShuffle(i, kMax63, 42), full) << "index " << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_NE(IndexShuffle(kMax, kMax, 42), IndexShuffle(kMax - 1, kMax, 42));
}

TEST(IndexShuffleTest, RejectsBadRounds) {
  for (uint32_t rounds : {0u, 2u, 3u, 5u, 1023u, 1025u, 1026u, 4294967294u}) {
    EXPECT_THROW(IndexShuffle(0, 8, 33, rounds), std::invalid_argument) << rounds;
  }
  EXPECT_NO_THROW(IndexShuffle(0, 8, 33, 1024));
  try {
    IndexShuffle(0, 8, 33, 5);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rounds"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("5"), std::string::npos) << e.what();
  }
}

TEST(IndexShuffleTest, RejectsIndexAboveMax) {
  EXPECT_THROW(IndexShuffle(9, 8, 76), std::invalid_argument);
  EXPECT_THROW(IndexShuffle(1, 0, 76), std::invalid_argument);
  try {
    IndexShuffle(9, 8, 76);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("index 9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_index 8"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------
// SeedSequenceGenerateState
// ---------------------------------------------------------------------------------------

struct SeedSequenceCase {
  std::vector<uint64_t> entropy;
  std::vector<uint32_t> expected;
};

TEST(SeedSequenceTest, MatchesNumpy) {
  // From numpy 2.4.6: SeedSequence(entropy).generate_state(8, dtype=np.uint32). Covers
  // empty entropy, zero, multi-word integers and more words than the pool of 4.
  const SeedSequenceCase kCases[] = {
      {{42u, 1u}, {3329053876u, 3645748255u, 2086902591u, 1553161135u, 2308860487u,
        2861903415u, 2147616462u, 2065194196u}},
      {{}, {2968811710u, 3677149159u, 745650761u, 2884920346u, 2642120001u, 549907821u,
        574372308u, 742431198u}},
      {{0u}, {2968811710u, 3677149159u, 745650761u, 2884920346u, 2642120001u, 549907821u,
        574372308u, 742431198u}},
      {{42u}, {3444837047u, 2669555309u, 2046530742u, 3581440988u, 1691623607u, 2099784219u,
        1184028159u, 862288241u}},
      {{0x100000000u}, {3964924996u, 1358922860u, 3894904162u, 2051610843u, 908995353u,
        1006608236u, 2584106211u, 3182524243u}},
      {{4294967295u}, {1992424968u, 705021410u, 3255730584u, 540206095u, 2021606294u,
        3981099117u, 4091248893u, 1451846836u}},
      {{0xffffffffffffffffu}, {2458692877u, 2931597649u, 2251873402u, 295448644u, 1508262567u,
        465245526u, 3905202422u, 2808812003u}},
      {{1u, 2u, 3u, 4u}, {4251844491u, 3567780332u, 413190620u, 264885781u, 1821245976u,
        4103981193u, 3326562475u, 26063841u}},
      {{1u, 2u, 3u, 4u, 5u, 6u, 7u}, {1473699950u, 2347498550u, 2851142778u, 785663715u,
        3406297423u, 1173968772u, 295359968u, 1289085186u}},
      {{4294967295u, 0x200000007u, 0u, 0xb3a73ce2ff2u}, {2192461220u, 1827447304u, 4207563041u,
        1508736788u, 735522477u, 1652420489u, 465858095u, 3116899185u}},
      {{3329053876u, 0u, 0x10000000000u}, {3628731444u, 3550489842u, 43218465u, 3487001419u,
        449960927u, 1129116142u, 3588749285u, 4119986366u}},
  };
  for (const SeedSequenceCase& c : kCases) {
    EXPECT_EQ(SeedSequenceGenerateState(c.entropy, 8), c.expected)
        << "entropy size " << c.entropy.size();
    // generate_state(n) is a prefix of generate_state(m) for n < m.
    const std::vector<uint32_t> first3(c.expected.begin(), c.expected.begin() + 3);
    EXPECT_EQ(SeedSequenceGenerateState(c.entropy, 3), first3);
  }
}

TEST(SeedSequenceTest, GrainShuffleSeed) {
  // Grain derives the shuffle seed of MapDataset.range(10).seed(42).shuffle() this way.
  const std::vector<uint64_t> entropy = {42, 1};
  EXPECT_EQ(SeedSequenceGenerateState(entropy, 1), std::vector<uint32_t>{3329053876u});
}

TEST(SeedSequenceTest, ZeroWords) {
  const std::vector<uint64_t> entropy = {42};
  EXPECT_TRUE(SeedSequenceGenerateState(entropy, 0).empty());
}

// ---------------------------------------------------------------------------------------
// Philox
// ---------------------------------------------------------------------------------------

struct PhiloxSeedCase {
  uint64_t seed;
  std::array<uint64_t, 2> key;
  std::array<uint64_t, 9> raw;
};

TEST(PhiloxTest, MatchesNumpyFromSeed) {
  // From numpy 2.4.6: np.random.Philox(seed).state["state"]["key"] and .random_raw(9)
  // (9 outputs cross two block boundaries).
  const PhiloxSeedCase kCases[] = {
      {0u,
       {0xdb2cd7e7b0f478beu, 0xabf4641a2c71ba49u},
       {0x0399e5b222b82fa9u, 0x41fd08c1f00f3bc5u, 0x78b8824162ee4d04u, 0x176747919e02739du,
        0xfaa88f002a8d3596u, 0x418eb6f592e6c227u, 0xef83020b8344dd45u, 0x30a74a1a6eaa064bu,
        0x093d43bf97a490c3u}},
      {42u,
       {0x9f1e2e6dcd540ab7u, 0xd57873dc79fb94b6u},
       {0x16092f00ecdab98au, 0x243d19cc24021070u, 0x4524d130684efe02u, 0xdfc0f20c3c4b5bcau,
        0x2b8fe7053fb23371u, 0x81be758196fbd62cu, 0x54c28d775e0c03e0u, 0xd617bcda9b92127du,
        0x7a95a98a46f8f127u}},
      {std::numeric_limits<uint64_t>::max(),
       {0xaebca151928cad0du, 0x119c30448638dc7au},
       {0x979b219675f23d66u, 0xf108b4617e2f37f3u, 0xed78791b3ac9d148u, 0xa571f832c650f63au,
        0x659d06463567b41cu, 0xa2f0f489fa23ec34u, 0x3b9ab810008af37bu, 0x73a71ed40e6bf3ffu,
        0xcf138d4b69b8095du}},
  };
  for (const PhiloxSeedCase& c : kCases) {
    Philox philox(c.seed);
    EXPECT_EQ(philox.key(), c.key) << "seed " << c.seed;
    for (size_t i = 0; i < c.raw.size(); ++i) {
      EXPECT_EQ(philox.NextUint64(), c.raw[i]) << "seed " << c.seed << " output " << i;
    }
  }
}

struct PhiloxCounterCase {
  uint64_t seed;
  std::array<uint64_t, 4> counter;
  std::array<uint64_t, 6> raw;
};

TEST(PhiloxTest, SetCounterMatchesNumpy) {
  // From numpy 2.4.6: bg = np.random.Philox(seed); bg.random_raw(3); then the state is set
  // as Grain sets it (counter = c, buffer_pos = 4, has_uint32 = 0, uinteger = 0) and
  // bg.random_raw(6) recorded. The last two counters exercise the carry across words.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const PhiloxCounterCase kCases[] = {
      {42, {0, 0, 0, 0},
       {0x16092f00ecdab98au, 0x243d19cc24021070u, 0x4524d130684efe02u, 0xdfc0f20c3c4b5bcau,
        0x2b8fe7053fb23371u, 0x81be758196fbd62cu}},
      {42, {0, 0, 0, 7},
       {0xa5d2d31741a899f3u, 0x183f20422eff3b97u, 0xfebc018c5df3e0c7u, 0x15948bfc0a3181b4u,
        0x1fdad696b7e59076u, 0xb1cc89f3e66d0823u}},
      {42, {0, 0, 0, kMax},
       {0x5fc58ae5838a2f8au, 0x4d510b611f75ee28u, 0x9bcff0efe03ec1fau, 0x3d684dc6cc574280u,
        0xfbc34ec605d6b092u, 0x09438adb68811defu}},
      {7, {kMax, kMax, 5, 9},
       {0x7ae58abc016e3d8eu, 0x4a83069bda208761u, 0x94ca835b8fa65f70u, 0x5bb3a7b2f58e2101u,
        0xaa026001f42b2f90u, 0x82ec09549807fd00u}},
      {7, {kMax, kMax, kMax, 3},
       {0x09d52b4521381250u, 0x964bce6f52e3c653u, 0x20fc24bcaa0ff109u, 0xb7d4fc25e1606ccfu,
        0xbbea331eed0b9b22u, 0x8fc0db2ef734fa8du}},
  };
  for (const PhiloxCounterCase& c : kCases) {
    Philox philox(c.seed);
    for (int i = 0; i < 3; ++i) philox.NextUint64();
    philox.SetCounter(c.counter);
    for (size_t i = 0; i < c.raw.size(); ++i) {
      EXPECT_EQ(philox.NextUint64(), c.raw[i]) << "seed " << c.seed << " output " << i;
    }
  }
}

TEST(PhiloxTest, ExplicitKeyAndCounter) {
  // From numpy 2.4.6: np.random.Philox(key=[0x0123456789abcdef, 0xfedcba9876543210],
  // counter=[1, 2, 3, 4]).random_raw(5).
  Philox philox({0x0123456789abcdefu, 0xfedcba9876543210u}, {1, 2, 3, 4});
  const uint64_t kExpected[] = {0x88e941281d6fe907u, 0x5823687dd5272472u, 0x246fd1b93a04f59du,
    0x5f18e9daf3d87de6u, 0xa0177786c22eeb8au};
  for (uint64_t expected : kExpected) EXPECT_EQ(philox.NextUint64(), expected);
}

TEST(PhiloxTest, NextDoubleMatchesNumpyGenerator) {
  // From numpy 2.4.6: np.random.Generator(np.random.Philox(42)).random(5).
  Philox philox(42);
  const double kExpected[] = {0.08607763073528474, 0.14155732377913233, 0.27009303504774695,
    0.8740378646728407, 0.17016452673096505};
  for (double expected : kExpected) EXPECT_EQ(philox.NextDouble(), expected);
}

TEST(PhiloxTest, CopiesAreIndependent) {
  Philox a(7);
  a.NextUint64();
  Philox b = a;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.NextUint64(), b.NextUint64());
}

}  // namespace
}  // namespace spelt
