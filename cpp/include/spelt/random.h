// spelt/random.h: the pure random functions behind Spelt's determinism.
//
// Every random choice in Spelt is a pure function of (seed, global index); these are the
// primitives. All functions here are stateless or operate on caller-owned state, so they
// are thread-safe.
//
// Sources of the algorithms (bit-exact with them, tested against their outputs):
//  - IndexShuffle: Grain's `index_shuffle` (grain/_src/python/experimental/index_shuffle),
//    a Simon-style Feistel cipher with cycle walking. One deliberate difference: Grain's
//    block is ceil(log2(double(max_index))) bits, which is one bit too few when max_index is
//    an exact power of two 2^k (k even, k >= 16) or rounds to one as a double (e.g. 2^52+1),
//    so its map is not a permutation there. Spelt uses bit_width(max_index) bits, which
//    agrees with Grain wherever Grain's map is a permutation.
//  - SeedSequence: numpy.random.SeedSequence (entropy list -> generate_state(n, uint32)).
//  - Philox: numpy.random.Philox (Philox4x64-10), keyed as numpy keys it from an integer
//    seed (through SeedSequence), with the counter set as Grain sets it per element.
#ifndef SPELT_RANDOM_H_
#define SPELT_RANDOM_H_

#include <array>
#include <concepts>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace spelt {

// The seeds of shuffle, window shuffle, samplers and index_shuffle are uint32s, as in Grain.
// Returns `seed` as one; throws std::invalid_argument naming `what` if it is outside [0, 2^32).
uint32_t CheckSeed(int64_t seed, std::string_view what);

// A non-negative seed of any size, as Grain takes for ds.seed() and random_map (numpy's
// SeedSequence takes any non-negative int): its 32-bit words, least significant first, as
// numpy splits an int (0 is one word, 0). Immutable; thread-safe.
class AnySeed {
 public:
  // Implicit from any integer type; throws std::invalid_argument if negative.
  template <std::integral T>
  AnySeed(T seed) {  // NOLINT(google-explicit-constructor)
    if constexpr (std::signed_integral<T>) {
      if (seed < 0) {
        throw std::invalid_argument("seed must be non-negative, got " + std::to_string(seed));
      }
    }
    auto v = static_cast<uint64_t>(seed);
    do {
      words_.push_back(static_cast<uint32_t>(v));
      v >>= 32;
    } while (v != 0);
  }
  // From its words (e.g. of a Python int); throws std::invalid_argument if `words` is empty.
  explicit AnySeed(std::vector<uint32_t> words);

  const std::vector<uint32_t>& words() const { return words_; }

 private:
  std::vector<uint32_t> words_;
};

// Returns the position of `index` in a pseudo-random permutation of [0, max_index].
// REQUIRES: index <= max_index; rounds even and in [4, 1024] (throws std::invalid_argument).
uint64_t IndexShuffle(uint64_t index, uint64_t max_index, uint32_t seed, uint32_t rounds = 4);

// out[i] = IndexShuffle(indices[i], max_index, seed, rounds) for every i, computed several
// indices at a time (the key schedule once, the cipher's rounds on lanes the compiler
// vectorizes): about 4x faster than one call per index for a shuffle's batch of reads.
// REQUIRES: out.size() == indices.size(), and as IndexShuffle (throws std::invalid_argument,
// before writing anything, for the first index beyond max_index).
void IndexShuffleMany(std::span<const uint64_t> indices, uint64_t max_index, uint32_t seed,
                      std::span<uint64_t> out, uint32_t rounds = 4);

// numpy.random.SeedSequence(entropy).generate_state(n, dtype=uint32).
// Each entropy word is a non-negative integer < 2^64 (numpy splits it into 32-bit words).
std::vector<uint32_t> SeedSequenceGenerateState(std::span<const uint64_t> entropy, size_t n);

// numpy.random.Philox4x64-10 bit generator.
// Philox(seed) builds the 128-bit key as numpy.random.Philox(seed) does:
// SeedSequence(seed).generate_state(4, uint32) packed little-endian into two uint64.
// Not thread-safe (it is a generator); cheap to copy.
class Philox {
 public:
  explicit Philox(const AnySeed& seed);
  Philox(std::array<uint64_t, 2> key, std::array<uint64_t, 4> counter);

  // Sets the counter to {c0, c1, c2, c3} and empties the output buffer, as Grain does with
  // `bit_generator.state = {..., "counter": [0, 0, 0, index], "buffer_pos": 4, ...}`.
  void SetCounter(std::array<uint64_t, 4> counter);

  // Next raw 64-bit output; equals numpy's `Philox(...).random_raw()` sequence.
  uint64_t NextUint64();
  // Uniform double in [0, 1), as numpy's Generator.random() (53-bit).
  double NextDouble();

  const std::array<uint64_t, 2>& key() const { return key_; }
  const std::array<uint64_t, 4>& counter() const { return counter_; }

 private:
  std::array<uint64_t, 2> key_;
  std::array<uint64_t, 4> counter_;
  std::array<uint64_t, 4> buffer_;
  int buffer_pos_ = 4;
};

}  // namespace spelt

#endif  // SPELT_RANDOM_H_
