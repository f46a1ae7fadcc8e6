// Tests for BatchAndPad (spelt/stack.h), Grain 0.2.18's batch_and_pad.
#include <gtest/gtest.h>

#include "spelt/stack.h"
#include "test_util.h"

namespace spelt {
namespace {

using namespace spelt::testing;  // NOLINT

TEST(BatchAndPadTest, PadsToBatchSize) {
  EXPECT_EQ(ArrayInts(BatchAndPad({Value(1), Value(2)}, 4, Value(7))), (Ints{1, 2, 7, 7}));
  EXPECT_EQ(ArrayInts(BatchAndPad({Value(1), Value(2)}, 2, Value(7))), (Ints{1, 2}));
  // np.full casts the pad value to the leaf's dtype (int: 0.7 -> 0).
  EXPECT_EQ(ArrayInts(BatchAndPad({Value(1)}, 3, Value(0.7))), (Ints{1, 0, 0}));
  const Value dict = BatchAndPad({Value::Dict({{"x", Value(1.5)}})}, 2, Value(-1));
  const Array& x = dict["x"].AsArray();
  EXPECT_EQ(x.dtype, DType::kFloat64);
  EXPECT_EQ(reinterpret_cast<const double*>(x.data)[1], -1.0);
}

TEST(BatchAndPadTest, RejectsBadInput) {
  EXPECT_THROW(BatchAndPad({}, 2, Value(0)), std::invalid_argument);
  EXPECT_THROW(BatchAndPad({Value(1), Value(2), Value(3)}, 2, Value(0)), std::invalid_argument);
  EXPECT_THROW(BatchAndPad({Value::Text("a")}, 2, Value(0)), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
