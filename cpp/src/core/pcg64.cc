// numpy/random/src/pcg64 (PCG-XSL-RR 128/64) and Generator.shuffle's Fisher-Yates loop, in
// our own words; tested against numpy's outputs (cpp/tests/packing_test.cc, tests/test_packing.py).
#include "core/pcg64.h"

#include <bit>
#include <numeric>
#include <span>

#include "spelt/random.h"

namespace spelt::internal {
namespace {

constexpr unsigned __int128 kMultiplier =
    (static_cast<unsigned __int128>(2549297995355413924ULL) << 64) + 4865540595714422341ULL;

}  // namespace

Pcg64::Pcg64(uint64_t seed) {
  const uint64_t entropy[] = {seed};
  const std::vector<uint32_t> w = SeedSequenceGenerateState(entropy, 8);
  auto word = [&](int i) { return w[2 * i] | (uint64_t{w[2 * i + 1]} << 32); };
  const unsigned __int128 init_state = (static_cast<unsigned __int128>(word(0)) << 64) | word(1);
  const unsigned __int128 init_seq = (static_cast<unsigned __int128>(word(2)) << 64) | word(3);
  // pcg_setseq_128_srandom_r
  inc_ = (init_seq << 1) | 1;
  state_ = 0;
  state_ = state_ * kMultiplier + inc_;
  state_ += init_state;
  state_ = state_ * kMultiplier + inc_;
}

uint64_t Pcg64::NextUint64() {
  state_ = state_ * kMultiplier + inc_;
  const auto hi = static_cast<uint64_t>(state_ >> 64), lo = static_cast<uint64_t>(state_);
  return std::rotr(hi ^ lo, static_cast<int>(state_ >> 122));
}

uint32_t Pcg64::NextUint32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uint32_;
  }
  const uint64_t next = NextUint64();
  has_uint32_ = true;
  uint32_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next);
}

uint64_t Pcg64::Interval(uint64_t max) {
  if (max == 0) return 0;
  const uint64_t mask = ~uint64_t{0} >> std::countl_zero(max);
  uint64_t value;
  if (max <= 0xffffffffULL) {
    while ((value = (NextUint32() & mask)) > max) {
    }
  } else {
    while ((value = (NextUint64() & mask)) > max) {
    }
  }
  return value;
}

std::vector<int64_t> NumpyPermuted(uint64_t seed, int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), int64_t{0});
  Pcg64 rng(seed);
  for (int64_t i = n - 1; i >= 1; --i) {
    std::swap(out[static_cast<size_t>(i)],
              out[static_cast<size_t>(rng.Interval(static_cast<uint64_t>(i)))]);
  }
  return out;
}

}  // namespace spelt::internal
