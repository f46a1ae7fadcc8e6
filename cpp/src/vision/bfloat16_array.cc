// BFloat16Array and BFloat16FromFloat (spelt/bfloat16_array.h).
#include "spelt/bfloat16_array.h"

#include <bit>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace spelt {

uint16_t BFloat16FromFloat(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: Eigen's (ml_dtypes') quiet NaN of its sign
    return (bits & 0x80000000u) != 0 ? 0xffc0u : 0x7fc0u;
  }
  // Round to nearest even on the low 16 bits; a carry may reach the exponent (to infinity).
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

BFloat16Array::BFloat16Array(Array bits) : bits_(std::move(bits)) {
  if (bits_.dtype != DType::kUint16) {
    throw std::invalid_argument("BFloat16Array: needs uint16 bits, got " + bits_.Describe());
  }
}

Value BFloat16Array::Unpack() const {
  return Value(std::shared_ptr<const Opaque>(std::make_shared<BFloat16Array>(bits_)));
}

std::string BFloat16Array::Describe() const {
  return "bfloat16" + bits_.Describe().substr(DTypeName(DType::kUint16).size());
}

Value BFloat16Array::StackLeaves(const std::vector<const Opaque*>& leaves) const {
  std::vector<int64_t> shape{static_cast<int64_t>(leaves.size())};
  shape.insert(shape.end(), bits_.shape.begin(), bits_.shape.end());
  Array out = Array::AllocateUninitialized(DType::kUint16, std::move(shape));
  const size_t leaf_bytes = bits_.nbytes();
  for (size_t i = 0; i < leaves.size(); ++i) {
    const auto* leaf = dynamic_cast<const BFloat16Array*>(leaves[i]);
    if (leaf == nullptr || leaf->bits_.shape != bits_.shape) {
      throw std::invalid_argument(Describe() + " vs " + leaves[i]->Describe() + " (element " +
                                  std::to_string(i) + ")");
    }
    if (leaf_bytes != 0) {
      std::memcpy(out.mutable_data() + i * leaf_bytes, leaf->bits_.data, leaf_bytes);
    }
  }
  return Value(std::shared_ptr<const Opaque>(std::make_shared<BFloat16Array>(std::move(out))));
}

}  // namespace spelt
