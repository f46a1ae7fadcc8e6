// Internal: len(range(start, stop, step)) as Python computes it, for any int64 values.
#ifndef SPELT_SRC_BASE_RANGE_LENGTH_H_
#define SPELT_SRC_BASE_RANGE_LENGTH_H_

#include <cstdint>

namespace spelt::internal {

// REQUIRES: step != 0. Unsigned arithmetic, so huge steps do not overflow
// (len(range(0, 10, 2**63 - 1)) == 1).
inline int64_t RangeLength(int64_t start, int64_t stop, int64_t step) {
  const auto ustart = static_cast<uint64_t>(start), ustop = static_cast<uint64_t>(stop);
  if (step > 0) {
    return stop > start ? static_cast<int64_t>((ustop - ustart - 1) / static_cast<uint64_t>(step) + 1)
                        : 0;
  }
  return start > stop
             ? static_cast<int64_t>((ustart - ustop - 1) / (0 - static_cast<uint64_t>(step)) + 1)
             : 0;
}

}  // namespace spelt::internal

#endif  // SPELT_SRC_BASE_RANGE_LENGTH_H_
