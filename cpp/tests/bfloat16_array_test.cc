// Tests of spelt/bfloat16_array.h: the rounding from float32, and the leaf's description,
// stacking and errors (its use by Normalize is in vision_image_ops_test.cc).
#include "spelt/bfloat16_array.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

namespace spelt {
namespace {

TEST(BFloat16ArrayTest, RoundsToNearestEvenAsMlDtypes) {
  const auto bf16 = [](uint32_t bits) { return BFloat16FromFloat(std::bit_cast<float>(bits)); };
  EXPECT_EQ(bf16(0x3f800000u), 0x3f80u);  // 1.0 exactly
  EXPECT_EQ(bf16(0x3f808000u), 0x3f80u);  // a tie below an even mantissa: down
  EXPECT_EQ(bf16(0x3f818000u), 0x3f82u);  // a tie below an odd one: up
  EXPECT_EQ(bf16(0x3f808001u), 0x3f81u);  // above the tie: up
  EXPECT_EQ(bf16(0xbf80ffffu), 0xbf81u);  // negative, below the next tie: up in magnitude
  EXPECT_EQ(bf16(0x7f7fffffu), 0x7f80u);  // the largest float: to infinity
  EXPECT_EQ(bf16(0xff800000u), 0xff80u);  // -infinity stays
  EXPECT_EQ(bf16(0x7fc00001u), 0x7fc0u);  // NaN: ml_dtypes' quiet NaN of its sign
  EXPECT_EQ(bf16(0xff812345u), 0xffc0u);
  EXPECT_EQ(bf16(0x00010000u), 0x0001u);  // a subnormal keeps its top bits
}

TEST(BFloat16ArrayTest, StacksLeavesOfOneShapeAndRefusesOthers) {
  Array bits = Array::Allocate(DType::kUint16, {2, 3});
  for (int i = 0; i < 6; ++i) reinterpret_cast<uint16_t*>(bits.mutable_data())[i] = 0x3f80 + i;
  const BFloat16Array a(bits);
  EXPECT_EQ(a.Describe(), "bfloat16[2,3]");
  EXPECT_EQ(a.ByteSize(), 12);
  const Value stacked = a.StackLeaves({&a, &a, &a});
  const auto* out =
      dynamic_cast<const BFloat16Array*>(stacked.as<std::shared_ptr<const Opaque>>().get());
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->bits().shape, (std::vector<int64_t>{3, 2, 3}));
  EXPECT_EQ(reinterpret_cast<const uint16_t*>(out->bits().data)[13], 0x3f81);
  const BFloat16Array other(Array::Allocate(DType::kUint16, {3, 2}));
  EXPECT_THROW(a.StackLeaves({&a, &other}), std::invalid_argument);
  EXPECT_THROW(BFloat16Array(Array::Allocate(DType::kFloat32, {1})), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
