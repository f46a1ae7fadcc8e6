// Internal: numpy's PCG64 bit generator and Generator.permuted, bit-exact, for operations that
// must draw what a Grain transformation draws with `np.random.default_rng(seed)` (the bin
// shuffle of FirstFitPackIterDataset: `default_rng(seed).permuted(range(n))`).
// Not thread-safe (a generator); cheap to copy.
#ifndef SPELT_SRC_CORE_PCG64_H_
#define SPELT_SRC_CORE_PCG64_H_

#include <cstdint>
#include <vector>

namespace spelt::internal {

class Pcg64 {
 public:
  // As numpy.random.PCG64(seed): keyed through SeedSequence(seed).generate_state(4, uint64).
  explicit Pcg64(uint64_t seed);
  // numpy's next_uint64 / next_uint32 (the latter halves a 64-bit draw, low half first).
  uint64_t NextUint64();
  uint32_t NextUint32();
  // numpy's random_interval(max): uniform in [0, max] by masked rejection.
  uint64_t Interval(uint64_t max);

 private:
  unsigned __int128 state_ = 0, inc_ = 0;
  bool has_uint32_ = false;
  uint32_t uint32_ = 0;
};

// np.random.default_rng(seed).permuted(np.arange(n)): a permutation of [0, n).
std::vector<int64_t> NumpyPermuted(uint64_t seed, int64_t n);

}  // namespace spelt::internal

#endif  // SPELT_SRC_CORE_PCG64_H_
