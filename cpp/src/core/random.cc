// Implementation of spelt/random.h: Grain's index_shuffle, numpy's SeedSequence and numpy's
// Philox4x64-10, reimplemented bit-exactly (see random.h for the sources).
#include "spelt/random.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace spelt {
namespace {

// ---------------------------------------------------------------------------------------
// IndexShuffle
// ---------------------------------------------------------------------------------------

constexpr uint32_t kMinRounds = 4;
constexpr uint32_t kMaxRounds = 1024;

// std::seed_seq{seed}.generate(out, out + n) for n >= 4, written out (the algorithm is fixed
// by the C++ standard, [rand.util.seedseq]) so that no heap allocation is needed. The golden
// tests against Grain, which calls std::seed_seq, cover every branch of `t`.
void SeedSeqGenerate(uint32_t seed, uint32_t* out, size_t n) {
  std::fill(out, out + n, 0x8b8b8b8bu);
  const size_t t = n >= 623 ? 11 : n >= 68 ? 7 : n >= 39 ? 5 : n >= 7 ? 3 : (n - 1) / 2;
  const size_t p = (n - t) / 2;
  const size_t q = p + t;
  const auto T = [](uint32_t x) { return x ^ (x >> 27); };
  // The standard indexes out[] with k, k + p, k + q and k - 1, all mod n, for k in
  // [0, 2n) (its m = max(s + 1, n) is n here, as s = 1 and n >= 4). Keeping the four
  // indices as wrapping counters avoids ~8 divisions per step.
  size_t i = 0, ip = p, iq = q, im = n - 1;
  const auto advance = [n](size_t& index) { index = index + 1 == n ? 0 : index + 1; };
  for (size_t k = 0; k < 2 * n; ++k) {
    if (k < n) {
      const uint32_t r1 = 1664525u * T(out[i] ^ out[ip] ^ out[im]);
      // The standard adds s (= 1) at k = 0 and v[k - 1] (= seed) at 1 <= k <= s.
      const uint32_t r2 = r1 + (k == 0 ? 1u : static_cast<uint32_t>(i) + (k == 1 ? seed : 0));
      out[ip] += r1;
      out[iq] += r2;
      out[i] = r2;
    } else {
      const uint32_t r3 = 1566083941u * T(out[i] + out[ip] + out[im]);
      const uint32_t r4 = r3 - static_cast<uint32_t>(i);
      out[ip] ^= r3;
      out[iq] ^= r4;
      out[i] = r4;
    }
    advance(i);
    advance(ip);
    advance(iq);
    advance(im);
  }
}

// Simon-style Feistel cipher on a block of 2 * `word_bits` bits (8 <= word_bits <= 32).
class BlockCipher {
 public:
  BlockCipher(const uint32_t* keys, uint32_t rounds, int word_bits)
      : keys_(keys),
        rounds_(rounds),
        word_bits_(word_bits),
        mask_((uint64_t{1} << word_bits) - 1) {}

  uint64_t Encrypt(uint64_t value) const {
    uint64_t left = (value >> word_bits_) & mask_;
    uint64_t right = value & mask_;
    for (uint32_t i = 0; i < rounds_; i += 2) {
      left ^= F(right) ^ (keys_[i] & mask_);
      right ^= F(left) ^ (keys_[i + 1] & mask_);
    }
    return (left << word_bits_) | right;
  }

 private:
  // Rotation left by `n` within a `word_bits_`-bit word (0 < n < word_bits_).
  uint64_t Rotl(uint64_t x, int n) const {
    return ((x << n) | (x >> (word_bits_ - n))) & mask_;
  }
  uint64_t F(uint64_t x) const { return (Rotl(x, 1) & Rotl(x, 8)) ^ Rotl(x, 2); }

  const uint32_t* keys_;
  uint32_t rounds_;
  int word_bits_;
  uint64_t mask_;
};

// Block size in bits: the bit width of max_index rounded up to even, at least 16.
//
// Grain computes the width as ceil(log2(double(max_index))), which is either
// bit_width(max_index) or one less: one less exactly when log2 lands on an integer, i.e.
// max_index is a power of two 2^k (or rounds to one in double precision). After rounding
// up to even the two agree unless that one-less width is even and >= 16; then Grain's
// block cannot hold max_index and its map is not a permutation. Using bit_width therefore
// agrees with Grain everywhere Grain is a permutation, and fixes it where it is not.
int BlockBits(uint64_t max_index) {
  int bits = std::bit_width(max_index);
  bits += bits % 2;
  return std::max(bits, 16);
}

}  // namespace

uint32_t CheckSeed(int64_t seed, std::string_view what) {
  if (seed < 0 || seed > int64_t{0xFFFFFFFF}) {
    throw std::invalid_argument(std::string(what) + ": seed must be in [0, 2**32), got " +
                                std::to_string(seed));
  }
  return static_cast<uint32_t>(seed);
}

AnySeed::AnySeed(std::vector<uint32_t> words) : words_(std::move(words)) {
  if (words_.empty()) throw std::invalid_argument("seed: no seed words");
}

namespace {

void CheckShuffleArguments(uint32_t rounds) {
  if (rounds % 2 != 0 || rounds < kMinRounds || rounds > kMaxRounds) {
    throw std::invalid_argument("IndexShuffle: rounds must be an even integer in [" +
                                std::to_string(kMinRounds) + ", " +
                                std::to_string(kMaxRounds) +
                                "], got " + std::to_string(rounds));
  }
}

void CheckShuffleIndex(uint64_t index, uint64_t max_index) {
  if (index > max_index) {
    throw std::invalid_argument("IndexShuffle: index must be in [0, max_index], got index " +
                                std::to_string(index) + " and max_index " +
                                std::to_string(max_index));
  }
}

// The key schedule of (seed, rounds), kept per thread for the next call, which is usually of
// the same permutation (a shuffle reads a chunk of one epoch).
const uint32_t* ShuffleKeys(uint32_t seed, uint32_t rounds) {
  thread_local struct {
    uint32_t seed = 0, rounds = 0;  // rounds 0: nothing kept yet
    uint32_t keys[kMaxRounds];
  } schedule;
  if (schedule.rounds != rounds || schedule.seed != seed) {
    SeedSeqGenerate(seed, schedule.keys, rounds);
    schedule.seed = seed;
    schedule.rounds = rounds;
  }
  return schedule.keys;
}

// IndexShuffleMany's lanes: kLanes indices encrypted side by side as 32-bit halves (a block
// has at most 64 bits) in GCC/Clang vector types (SSE2 or AVX2 instructions, whichever the
// build targets). Cycles have different lengths: a lane whose value has re-entered
// [0, max_index] hands out its result and takes the next index, so that no lane idles until
// the last index of the run (a lane with nothing left computes on unused).
constexpr int kLanes = 8;
using Lanes = uint32_t __attribute__((vector_size(4 * kLanes)));
using LaneMask = int32_t __attribute__((vector_size(4 * kLanes)));

void ShuffleLanes(std::span<const uint64_t> indices, uint64_t max_index, const uint32_t* keys,
                  uint32_t rounds, int word_bits, uint64_t* out) {
  const uint32_t mask = static_cast<uint32_t>((uint64_t{1} << word_bits) - 1);
  const Lanes masks = Lanes{} + mask;
  const Lanes max_left = Lanes{} + static_cast<uint32_t>(max_index >> word_bits);
  const Lanes max_right = Lanes{} + (static_cast<uint32_t>(max_index) & mask);
  // y ^= F(x) ^ key, F as BlockCipher's (the mask taken once: it distributes over & and ^).
  // Vectors pass by reference: by value they would change the ABI between SSE2 and AVX.
  const auto round = [&](const Lanes& x, Lanes& y, uint32_t key) {
    const Lanes rotl1 = (x << 1) | (x >> (word_bits - 1));
    const Lanes rotl2 = (x << 2) | (x >> (word_bits - 2));
    const Lanes rotl8 = (x << 8) | (x >> (word_bits - 8));
    y ^= (((rotl1 & rotl8) ^ rotl2) & masks) ^ (key & mask);
  };
  uint32_t left[kLanes], right[kLanes];
  size_t slot[kLanes];  // where each lane's result goes; indices.size(): nothing
  size_t next = 0;
  const auto load = [&](int j) {
    const uint64_t value = next < indices.size() ? indices[next] : 0;
    left[j] = static_cast<uint32_t>(value >> word_bits);
    right[j] = static_cast<uint32_t>(value) & mask;
    slot[j] = next < indices.size() ? next++ : indices.size();
  };
  for (int j = 0; j < kLanes; ++j) load(j);
  for (size_t remaining = indices.size(); remaining > 0;) {
    Lanes l, r;
    std::memcpy(&l, left, sizeof(l));
    std::memcpy(&r, right, sizeof(r));
    for (uint32_t i = 0; i < rounds; i += 2) {
      round(r, l, keys[i]);
      round(l, r, keys[i + 1]);
    }
    const LaneMask inside = (l < max_left) | ((l == max_left) & (r <= max_right));
    std::memcpy(left, &l, sizeof(l));
    std::memcpy(right, &r, sizeof(r));
    for (int j = 0; j < kLanes; ++j) {
      if (inside[j] == 0 || slot[j] == indices.size()) continue;
      out[slot[j]] = (uint64_t{left[j]} << word_bits) | right[j];
      --remaining;
      load(j);
    }
  }
}

}  // namespace

uint64_t IndexShuffle(uint64_t index, uint64_t max_index, uint32_t seed, uint32_t rounds) {
  CheckShuffleArguments(rounds);
  CheckShuffleIndex(index, max_index);
  if (max_index == 0) return 0;
  const BlockCipher cipher(ShuffleKeys(seed, rounds), rounds, BlockBits(max_index) / 2);
  // Cycle walking: the cipher permutes [0, 2^bits); following a cycle from `index` until it
  // re-enters [0, max_index] gives a permutation of [0, max_index].
  uint64_t value = index;
  do {
    value = cipher.Encrypt(value);
  } while (value > max_index);
  return value;
}

void IndexShuffleMany(std::span<const uint64_t> indices, uint64_t max_index, uint32_t seed,
                      std::span<uint64_t> out, uint32_t rounds) {
  CheckShuffleArguments(rounds);
  if (out.size() != indices.size()) {
    throw std::invalid_argument("IndexShuffleMany: " + std::to_string(indices.size()) +
                                " indices but room for " + std::to_string(out.size()));
  }
  for (const uint64_t index : indices) CheckShuffleIndex(index, max_index);
  if (max_index == 0) {
    std::fill(out.begin(), out.end(), 0);
    return;
  }
  const uint32_t* keys = ShuffleKeys(seed, rounds);
  const int word_bits = BlockBits(max_index) / 2;
  ShuffleLanes(indices, max_index, keys, rounds, word_bits, out.data());
}

// ---------------------------------------------------------------------------------------
// SeedSequence (numpy/random/bit_generator.pyx)
// ---------------------------------------------------------------------------------------

namespace {

constexpr size_t kPoolSize = 4;
constexpr uint32_t kInitA = 0x43b0d7e5;
constexpr uint32_t kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd;
constexpr uint32_t kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd;
constexpr uint32_t kMixMultR = 0x4973f715;
constexpr int kXShift = 16;

uint32_t HashMix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  return value ^ (value >> kXShift);
}

uint32_t Mix(uint32_t x, uint32_t y) {
  const uint32_t result = kMixMultL * x - kMixMultR * y;
  return result ^ (result >> kXShift);
}

}  // namespace

std::vector<uint32_t> SeedSequenceGenerateState(std::span<const uint64_t> entropy, size_t n) {
  // numpy coerces each integer to its 32-bit words, least significant first; 0 is [0].
  std::vector<uint32_t> words;
  for (uint64_t v : entropy) {
    do {
      words.push_back(static_cast<uint32_t>(v));
      v >>= 32;
    } while (v != 0);
  }

  // SeedSequence.mix_entropy: hash the entropy into the pool.
  std::array<uint32_t, kPoolSize> pool;
  uint32_t hash_const = kInitA;
  for (size_t i = 0; i < kPoolSize; ++i) {
    pool[i] = HashMix(i < words.size() ? words[i] : 0, hash_const);
  }
  for (size_t src = 0; src < kPoolSize; ++src) {
    for (size_t dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = Mix(pool[dst], HashMix(pool[src], hash_const));
    }
  }
  for (size_t src = kPoolSize; src < words.size(); ++src) {
    for (size_t dst = 0; dst < kPoolSize; ++dst) {
      pool[dst] = Mix(pool[dst], HashMix(words[src], hash_const));
    }
  }

  // SeedSequence.generate_state(n, uint32): cycle over the pool, hashing each word.
  std::vector<uint32_t> state(n);
  hash_const = kInitB;
  for (size_t i = 0; i < n; ++i) {
    uint32_t value = pool[i % kPoolSize] ^ hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    state[i] = value ^ (value >> kXShift);
  }
  return state;
}

// ---------------------------------------------------------------------------------------
// Philox4x64-10 (numpy/random/src/philox, after Random123)
// ---------------------------------------------------------------------------------------

namespace {

constexpr int kPhiloxRounds = 10;
constexpr uint64_t kPhiloxM0 = 0xD2E7470EE14C6C93;
constexpr uint64_t kPhiloxM1 = 0xCA5A826395121157;
constexpr uint64_t kPhiloxW0 = 0x9E3779B97F4A7C15;
constexpr uint64_t kPhiloxW1 = 0xBB67AE8584CAA73B;

std::array<uint64_t, 2> KeyFromSeed(const AnySeed& seed) {
  // One entropy word per 32-bit word gives numpy the same word list as the int itself.
  const std::vector<uint64_t> entropy(seed.words().begin(), seed.words().end());
  const std::vector<uint32_t> w = SeedSequenceGenerateState(entropy, 4);
  return {w[0] | (uint64_t{w[1]} << 32), w[2] | (uint64_t{w[3]} << 32)};
}

std::array<uint64_t, 4> PhiloxBlock(std::array<uint64_t, 4> ctr, std::array<uint64_t, 2> key) {
  for (int r = 0; r < kPhiloxRounds; ++r) {
    if (r > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    const unsigned __int128 p0 = static_cast<unsigned __int128>(kPhiloxM0) * ctr[0];
    const unsigned __int128 p1 = static_cast<unsigned __int128>(kPhiloxM1) * ctr[2];
    const uint64_t hi0 = static_cast<uint64_t>(p0 >> 64), lo0 = static_cast<uint64_t>(p0);
    const uint64_t hi1 = static_cast<uint64_t>(p1 >> 64), lo1 = static_cast<uint64_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

}  // namespace

Philox::Philox(const AnySeed& seed) : Philox(KeyFromSeed(seed), {0, 0, 0, 0}) {}

Philox::Philox(std::array<uint64_t, 2> key, std::array<uint64_t, 4> counter)
    : key_(key), counter_(counter), buffer_{} {}

void Philox::SetCounter(std::array<uint64_t, 4> counter) {
  counter_ = counter;
  buffer_pos_ = 4;
}

uint64_t Philox::NextUint64() {
  if (buffer_pos_ < 4) return buffer_[buffer_pos_++];
  // As numpy does, increment the 256-bit counter (with carry) before each block.
  for (uint64_t& word : counter_) {
    if (++word != 0) break;
  }
  buffer_ = PhiloxBlock(counter_, key_);
  buffer_pos_ = 1;
  return buffer_[0];
}

double Philox::NextDouble() {
  return static_cast<double>(NextUint64() >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

}  // namespace spelt
