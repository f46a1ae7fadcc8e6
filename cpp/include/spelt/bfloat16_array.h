// spelt/bfloat16_array.h: bfloat16 arrays as engine values (issue 23's Normalize to bfloat16).
#ifndef SPELT_BFLOAT16_ARRAY_H_
#define SPELT_BFLOAT16_ARRAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "spelt/value.h"

namespace spelt {

// An array of bfloat16 values, Normalize's bfloat16 output (spelt/image_ops.h). The engine has
// no bfloat16 dtype, so such an array is this Opaque leaf over a uint16 Array of the values' bit
// patterns (1 sign, 8 exponent, 7 mantissa bits), of the array's shape. Batching stacks such
// leaves into one (StackLeaves, no conversion); the Python face hands it out as a numpy array of
// ml_dtypes.bfloat16 sharing the bits (cpp/python/py_value.cc). Immutable, so safe to share
// between threads.
class BFloat16Array final : public Opaque {
 public:
  // REQUIRES: bits.dtype == DType::kUint16 (std::invalid_argument otherwise).
  explicit BFloat16Array(Array bits);
  const Array& bits() const { return bits_; }
  Value Unpack() const override;  // the same leaf (it has no Value-tree form)
  std::string Describe() const override;  // e.g. "bfloat16[224,224,3]"
  // One BFloat16Array of shape [n, ...]; std::invalid_argument if a leaf is not a
  // BFloat16Array or its shape differs from this one's.
  Value StackLeaves(const std::vector<const Opaque*>& leaves) const override;
  int64_t ByteSize() const override { return static_cast<int64_t>(bits_.nbytes()); }

 private:
  Array bits_;
};

// The bfloat16 nearest to `x` (ties to even, overflow to infinity, NaN stays a quiet NaN), as
// ml_dtypes' cast from float32 (numpy's x.astype(ml_dtypes.bfloat16)).
uint16_t BFloat16FromFloat(float x);

}  // namespace spelt

#endif  // SPELT_BFLOAT16_ARRAY_H_
