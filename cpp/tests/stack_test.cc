// Tests for Stack() and StackedStringsTag() (spelt/stack.h).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/stack.h"
#include "spelt/value.h"

namespace spelt {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

template <typename T>
Array MakeArray(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  Array a = Array::Allocate(dtype, std::move(shape));
  EXPECT_EQ(a.nbytes(), values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(a.mutable_data(), values.data(), a.nbytes());
  return a;
}

template <typename T>
std::vector<T> ArrayValues(const Array& a) {
  std::vector<T> out(static_cast<size_t>(a.num_elements()));
  EXPECT_EQ(a.nbytes(), out.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), a.data, a.nbytes());
  return out;
}

// The invalid_argument message Stack() throws for `elements` (fails the test if it doesn't).
std::string StackError(const std::vector<Value>& elements) {
  try {
    Stack(elements);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "Stack() did not throw std::invalid_argument";
  return "";
}

Value TaggedList(std::vector<Value> items, ContainerTag tag) {
  return Value(std::make_shared<const Sequence>(
      Sequence{Sequence::Kind::kList, std::move(items), std::move(tag)}));
}
Value TaggedTuple(std::vector<Value> items, ContainerTag tag) {
  return Value(std::make_shared<const Sequence>(
      Sequence{Sequence::Kind::kTuple, std::move(items), std::move(tag)}));
}
Value TaggedDict(std::vector<std::pair<std::string, Value>> items, ContainerTag tag) {
  return Value(std::make_shared<const Mapping>(Mapping{std::move(items), std::move(tag)}));
}

// A foreign object that unpacks to a fixed value and counts its Unpack() calls.
class FakeOpaque : public Opaque {
 public:
  explicit FakeOpaque(Value v, int* unpack_count = nullptr)
      : v_(std::move(v)), unpack_count_(unpack_count) {}
  Value Unpack() const override {
    if (unpack_count_ != nullptr) ++*unpack_count_;
    return v_;
  }
  std::string Describe() const override { return "<FakeOpaque>"; }

 private:
  Value v_;
  int* unpack_count_;
};

Value MakeOpaque(Value v, int* unpack_count = nullptr) {
  return Value(std::shared_ptr<const Opaque>(std::make_shared<FakeOpaque>(std::move(v), unpack_count)));
}

// ---------------------------------------------------------------------------------------------
// Basic rules.

TEST(StackTest, EmptyInputThrows) {
  EXPECT_EQ(StackError({}), "Batch: cannot batch zero elements");
}

TEST(StackTest, StackedStringsTagIsConstantAndNonNull) {
  const ContainerTag& a = StackedStringsTag();
  const ContainerTag& b = StackedStringsTag();
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.get(), b.get());
}

TEST(StackTest, ArraysGetLeadingAxis) {
  Value out = Stack({Value(MakeArray<int32_t>(DType::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6})),
                     Value(MakeArray<int32_t>(DType::kInt32, {2, 3}, {7, 8, 9, 10, 11, 12}))});
  const Array& a = out.AsArray();
  EXPECT_EQ(a.dtype, DType::kInt32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(ArrayValues<int32_t>(a), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
}

TEST(StackTest, SingleElement) {
  Value out = Stack({Value(MakeArray<float>(DType::kFloat32, {2}, {1.5f, -2.f}))});
  EXPECT_EQ(out.AsArray().shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ArrayValues<float>(out.AsArray()), (std::vector<float>{1.5f, -2.f}));
}

TEST(StackTest, ZeroSizeArrays) {
  Value out = Stack({Value(MakeArray<uint8_t>(DType::kUint8, {0, 4}, {})),
                     Value(MakeArray<uint8_t>(DType::kUint8, {0, 4}, {}))});
  EXPECT_EQ(out.AsArray().shape, (std::vector<int64_t>{2, 0, 4}));
  EXPECT_EQ(out.AsArray().nbytes(), 0u);
}

TEST(StackTest, ZeroDimArraysStackToOneDimOfTheirDtype) {
  Value out = Stack({Value(MakeArray<int32_t>(DType::kInt32, {}, {3})),
                     Value(MakeArray<int32_t>(DType::kInt32, {}, {-4})),
                     Value(MakeArray<int32_t>(DType::kInt32, {}, {5}))});
  const Array& a = out.AsArray();
  EXPECT_EQ(a.dtype, DType::kInt32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(ArrayValues<int32_t>(a), (std::vector<int32_t>{3, -4, 5}));
}

TEST(StackTest, BoolScalars) {
  Value out = Stack({Value(true), Value(false), Value(true)});
  const Array& a = out.AsArray();
  EXPECT_EQ(a.dtype, DType::kBool);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(ArrayValues<uint8_t>(a), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(StackTest, IntScalars) {
  Value out = Stack({Value(int64_t{1}), Value(int64_t{-2}), Value(int64_t{1} << 40)});
  const Array& a = out.AsArray();
  EXPECT_EQ(a.dtype, DType::kInt64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(ArrayValues<int64_t>(a), (std::vector<int64_t>{1, -2, int64_t{1} << 40}));
}

TEST(StackTest, FloatScalars) {
  Value out = Stack({Value(1.5), Value(-2.25)});
  const Array& a = out.AsArray();
  EXPECT_EQ(a.dtype, DType::kFloat64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(ArrayValues<double>(a), (std::vector<double>{1.5, -2.25}));
}

TEST(StackTest, IntThenFloatUpcastsToFloat64) {
  Value out = Stack({Value(1), Value(2.5), Value(3)});
  const Array& a = out.AsArray();
  EXPECT_EQ(a.dtype, DType::kFloat64);
  EXPECT_EQ(ArrayValues<double>(a), (std::vector<double>{1.0, 2.5, 3.0}));
}

TEST(StackTest, FloatThenIntUpcastsToFloat64) {
  Value out = Stack({Value(1.5), Value(2), Value(-7)});
  const Array& a = out.AsArray();
  EXPECT_EQ(a.dtype, DType::kFloat64);
  EXPECT_EQ(ArrayValues<double>(a), (std::vector<double>{1.5, 2.0, -7.0}));
}

TEST(StackTest, LateFloatUpcastsEarlierInts) {
  // The first float is element 100 of 128, below the root.
  std::vector<Value> elements;
  std::vector<double> expected;
  for (int i = 0; i < 128; ++i) {
    Value x = i == 100 ? Value(0.5) : Value(i * 3 - 50);
    expected.push_back(i == 100 ? 0.5 : i * 3 - 50);
    elements.push_back(Value::Dict({{"x", x}}));
  }
  Value out = Stack(elements);
  const Array& a = out["x"].AsArray();
  EXPECT_EQ(a.dtype, DType::kFloat64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{128}));
  EXPECT_EQ(ArrayValues<double>(a), expected);
}

TEST(StackTest, BoolMixedWithNumbersPromotes) {
  // As np.stack([True, False, 1]): bool and int64 -> int64.
  Value out = Stack({Value(true), Value(false), Value(1)});
  EXPECT_EQ(out.AsArray().dtype, DType::kInt64);
  EXPECT_EQ(ArrayValues<int64_t>(out.AsArray()), (std::vector<int64_t>{1, 0, 1}));
  out = Stack({Value(7), Value(true)});
  EXPECT_EQ(out.AsArray().dtype, DType::kInt64);
  EXPECT_EQ(ArrayValues<int64_t>(out.AsArray()), (std::vector<int64_t>{7, 1}));
  out = Stack({Value(1.5), Value(true), Value(false)});
  EXPECT_EQ(out.AsArray().dtype, DType::kFloat64);
  EXPECT_EQ(ArrayValues<double>(out.AsArray()), (std::vector<double>{1.5, 1.0, 0.0}));
}

TEST(StackTest, ScalarsMixWithZeroDimArrays) {
  // A Python int is a 0-d int64 for np.stack: np.stack([np.int32(1), 2]) is int64.
  Value out = Stack({Value::Dict({{"a", Value(MakeArray<int32_t>(DType::kInt32, {}, {1}))}}),
                     Value::Dict({{"a", Value(2)}})});
  EXPECT_EQ(out["a"].AsArray().dtype, DType::kInt64);
  EXPECT_EQ(out["a"].AsArray().shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(ArrayValues<int64_t>(out["a"].AsArray()), (std::vector<int64_t>{1, 2}));
  // np.stack([1.5, np.float32(2)]) is float64; np.stack([True, np.uint8(3)]) is uint8.
  out = Stack({Value(1.5), Value(MakeArray<float>(DType::kFloat32, {}, {2.f}))});
  EXPECT_EQ(out.AsArray().dtype, DType::kFloat64);
  EXPECT_EQ(ArrayValues<double>(out.AsArray()), (std::vector<double>{1.5, 2.0}));
  out = Stack({Value(true), Value(MakeArray<uint8_t>(DType::kUint8, {}, {3}))});
  EXPECT_EQ(out.AsArray().dtype, DType::kUint8);
  EXPECT_EQ(ArrayValues<uint8_t>(out.AsArray()), (std::vector<uint8_t>{1, 3}));
}

TEST(StackTest, NumberMixedWithArrayOfOtherShapeThrows) {
  std::string msg =
      StackError({Value::Dict({{"a", Value(MakeArray<int32_t>(DType::kInt32, {1}, {1}))}}),
                  Value::Dict({{"a", Value(2)}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['a']: kind array vs int");
  msg = StackError({Value::Dict({{"a", Value(2)}}),
                    Value::Dict({{"a", Value(MakeArray<int32_t>(DType::kInt32, {1}, {1}))}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['a']: kind int vs array");
}

TEST(StackTest, ArrayShapeMismatchThrows) {
  std::vector<Value> elements;
  for (int i = 0; i < 5; ++i) {
    std::vector<int64_t> shape = {28, i == 3 ? 27 : 28};
    elements.push_back(Value::Dict({{"image", Value(Array::Allocate(DType::kUint8, shape))},
                                    {"label", Value(i)}}));
  }
  EXPECT_EQ(StackError(elements),
            "Batch: element 3 differs from element 0 at ['image']: uint8[28,28] vs uint8[28,27]");
}

TEST(StackTest, ArrayRankMismatchThrows) {
  std::string msg = StackError({Value(Array::Allocate(DType::kFloat32, {4})),
                                Value(Array::Allocate(DType::kFloat32, {2, 2}))});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at the root: float32[4] vs float32[2,2]");
}

TEST(StackTest, ShapeMismatchAfterPromotionNamesElementZerosDtype) {
  std::string msg = StackError({Value(Array::Allocate(DType::kInt32, {2})),
                                Value(Array::Allocate(DType::kFloat32, {2})),
                                Value(Array::Allocate(DType::kInt8, {3}))});
  EXPECT_EQ(msg, "Batch: element 2 differs from element 0 at the root: int32[2] vs int8[3]");
}

TEST(StackTest, ReportsFirstDifferingElement) {
  // Element 2 differs at 'label' (a later leaf), element 3 at 'image': element 2 is reported.
  std::vector<Value> elements;
  for (int i = 0; i < 5; ++i) {
    elements.push_back(Value::Dict(
        {{"image", Value(Array::Allocate(DType::kUint8, {i == 3 ? 3 : 4}))},
         {"label", i == 2 ? Value::Text("x") : Value(i)}}));
  }
  EXPECT_EQ(StackError(elements),
            "Batch: element 2 differs from element 0 at ['label']: kind int vs str");
}

// ---------------------------------------------------------------------------------------------
// Strings.

TEST(StackTest, TextStringsBecomeTaggedList) {
  Value out = Stack({Value::Text("a"), Value::Text("bc"), Value::Text("")});
  ASSERT_TRUE(out.is<std::shared_ptr<const Sequence>>());
  const Sequence& s = out.AsSequence();
  EXPECT_EQ(s.kind, Sequence::Kind::kList);
  EXPECT_EQ(s.tag, StackedStringsTag());
  EXPECT_NE(s.tag, nullptr);
  ASSERT_EQ(s.items.size(), 3u);
  EXPECT_EQ(s.items[0], Value::Text("a"));
  EXPECT_EQ(s.items[1], Value::Text("bc"));
  EXPECT_EQ(s.items[2], Value::Text(""));
}

TEST(StackTest, BytesStringsBecomeTaggedList) {
  Value out = Stack({Value::Dict({{"b", Value::Bytes(std::string("\0x", 2))}}),
                     Value::Dict({{"b", Value::Bytes("yz")}})});
  const Sequence& s = out["b"].AsSequence();
  EXPECT_EQ(s.kind, Sequence::Kind::kList);
  EXPECT_EQ(s.tag, StackedStringsTag());
  ASSERT_EQ(s.items.size(), 2u);
  EXPECT_EQ(s.items[0], Value::Bytes(std::string("\0x", 2)));
  EXPECT_EQ(s.items[1], Value::Bytes("yz"));
}

TEST(StackTest, TextMixedWithBytesThrows) {
  std::string msg = StackError({Value::Text("a"), Value::Bytes("b")});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at the root: kind str vs bytes");
  msg = StackError({Value::Tuple({Value::Bytes("a")}), Value::Tuple({Value::Bytes("a")}),
                    Value::Tuple({Value::Text("b")})});
  EXPECT_EQ(msg, "Batch: element 2 differs from element 0 at [0]: kind bytes vs str");
}

TEST(StackTest, PlainListOfStringsIsNotTaggedAsStacked) {
  // A list container inside each element keeps its (null) tag; its string leaves are stacked.
  Value out = Stack({Value::List({Value::Text("a")}), Value::List({Value::Text("b")})});
  const Sequence& outer = out.AsSequence();
  EXPECT_EQ(outer.tag, nullptr);
  ASSERT_EQ(outer.items.size(), 1u);
  EXPECT_EQ(outer.items[0].AsSequence().tag, StackedStringsTag());
  EXPECT_EQ(outer.items[0].AsSequence().items,
            (std::vector<Value>{Value::Text("a"), Value::Text("b")}));
}

// ---------------------------------------------------------------------------------------------
// None.

TEST(StackTest, NoneLeavesNeedObjectArrays) {
  // np.stack makes object arrays of None leaves: without a fallback (no Python face here) the
  // error names the leaf, whether None is everywhere or mixed with values.
  ASSERT_EQ(ObjectStackFallback(), nullptr);
  const std::string expected =
      "Batch: the leaves at ['a'] include None, which stacks to a numpy object array; the "
      "engine has no object arrays without the Python face";
  EXPECT_EQ(StackError({Value::Dict({{"a", Value()}}), Value::Dict({{"a", Value()}})}), expected);
  EXPECT_EQ(StackError({Value::Dict({{"a", Value()}}), Value::Dict({{"a", Value(1)}})}), expected);
  EXPECT_EQ(StackError({Value::Dict({{"a", Value(1)}}), Value::Dict({{"a", Value()}})}), expected);
}

TEST(StackTest, NoneLeavesUseTheRegisteredFallback) {
  SetObjectStackFallback([](const std::vector<Value>& elements) {
    return Value(static_cast<int64_t>(elements.size()));
  });
  EXPECT_EQ(Stack({Value::Dict({{"a", Value()}}), Value::Dict({{"a", Value(1)}})}).AsInt(), 2);
  EXPECT_EQ(Stack({Value(1), Value(2)}).AsArray().num_elements(), 2);  // no None: native
  SetObjectStackFallback(nullptr);
}

// ---------------------------------------------------------------------------------------------
// TreeSemantics::kJax. CurrentTreeSemantics() is decided once per process, so these checks run
// in a forked child (gtest's death-test machinery), which writes the first failure to stderr.

// What Stack() throws for `elements`, or "" if it does not throw.
std::string ErrorOf(const std::vector<Value>& elements) {
  try {
    Stack(elements);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// "" if Stack() follows the kJax rules, else the first that does not hold.
std::string JaxSemanticsFailure() {
  if (CurrentTreeSemantics() != TreeSemantics::kPlain) return "kPlain without a resolver";
  SetTreeSemanticsResolver([] { return TreeSemantics::kJax; });
  if (CurrentTreeSemantics() != TreeSemantics::kJax) return "the resolver's answer is not used";
  Value out = Stack({Value::Dict({{"b", Value(1)}, {"a", Value()}}),
                     Value::Dict({{"a", Value()}, {"b", Value(2)}})});
  const Mapping& m = out.AsMapping();
  if (m.items.size() != 2 || m.items[0].first != "a") return "keys are not sorted";
  if (!m.items[0].second.is_none()) return "None did not stack to None";
  if (ArrayValues<int64_t>(m.items[1].second.AsArray()) != std::vector<int64_t>{1, 2}) {
    return "values moved with their keys";
  }
  const std::string none_vs_int =
      ErrorOf({Value::Dict({{"a", Value()}}), Value::Dict({{"a", Value(1)}})});
  if (none_vs_int !=
      "Batch: element 1 differs from element 0 at ['a']: None (an empty subtree) vs int") {
    return "None vs int: " + none_vs_int;
  }
  // A None where element 0 has a leaf is np.stack's (an object array): the fallback's.
  if (ErrorOf({Value(1), Value()}).find("include None") == std::string::npos) {
    return "int vs None does not need object arrays";
  }
  static const int kA = 0, kB = 0;
  const ContainerTag a(&kA, [](const void*) {}), b(&kB, [](const void*) {});
  const std::string tags = ErrorOf({TaggedTuple({Value(1)}, a), TaggedTuple({Value(2)}, b)});
  if (tags != "Batch: element 1 differs from element 0 at the root: tuples of different types or "
              "pytree structures") {
    return "different tags: " + tags;
  }
  if (Stack({TaggedTuple({Value(1)}, a), TaggedTuple({Value(2)}, a)}).AsSequence().tag != a) {
    return "equal tags do not stack";
  }
  return "";
}

TEST(StackTest, JaxTreeSemantics) {
  EXPECT_EXIT(
      {
        const std::string failure = JaxSemanticsFailure();
        std::fputs(failure.c_str(), stderr);
        std::_Exit(failure.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// ---------------------------------------------------------------------------------------------
// Containers.

TEST(StackTest, DictKeyOrderIsElementZeros) {
  Value out = Stack({Value::Dict({{"b", Value(1)}, {"a", Value(2.5)}}),
                     Value::Dict({{"a", Value(3.5)}, {"b", Value(4)}})});
  const Mapping& m = out.AsMapping();
  ASSERT_EQ(m.items.size(), 2u);
  EXPECT_EQ(m.items[0].first, "b");
  EXPECT_EQ(m.items[1].first, "a");
  EXPECT_EQ(ArrayValues<int64_t>(out["b"].AsArray()), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(ArrayValues<double>(out["a"].AsArray()), (std::vector<double>{2.5, 3.5}));
}

TEST(StackTest, DictKeysMismatchThrows) {
  std::string msg = StackError(
      {Value::Dict({{"label", Value::Dict({{"a", Value(1)}, {"b", Value(2)}})}}),
       Value::Dict({{"label", Value::Dict({{"a", Value(1)}, {"c", Value(2)}})}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['label']: dict keys ['a','b'] vs ['a','c']");
  // Different number of keys.
  msg = StackError({Value::Dict({{"a", Value(1)}}), Value::Dict({{"a", Value(1)}}),
                    Value::Dict({{"a", Value(1)}, {"b", Value(2)}})});
  EXPECT_EQ(msg, "Batch: element 2 differs from element 0 at the root: dict keys ['a'] vs ['a','b']");
}

TEST(StackTest, SequenceLengthMismatchThrows) {
  std::string msg = StackError({Value::Dict({{"x", Value::List({Value(1), Value(2)})}}),
                                Value::Dict({{"x", Value::List({Value(1), Value(2), Value(3)})}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['x']: list of length 2 vs 3");
  msg = StackError({Value::Tuple({Value(1)}), Value::Tuple({})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at the root: tuple of length 1 vs 0");
}

TEST(StackTest, ContainerKindMismatchThrows) {
  EXPECT_EQ(StackError({Value::List({Value(1)}), Value::Tuple({Value(1)})}),
            "Batch: element 1 differs from element 0 at the root: kind list vs tuple");
  EXPECT_EQ(StackError({Value::Dict({{"a", Value(1)}}), Value::List({Value(1)})}),
            "Batch: element 1 differs from element 0 at the root: kind dict vs list");
  EXPECT_EQ(StackError({Value::Dict({{"a", Value::Tuple({Value(1)})}}),
                        Value::Dict({{"a", Value(1)}})}),
            "Batch: element 1 differs from element 0 at ['a']: kind tuple vs int");
}

TEST(StackTest, NestedDictListTuple) {
  auto make = [](int i) {
    return Value::Dict(
        {{"a", Value::List({Value(i), Value::Tuple({Value::Dict({{"b", Value(i * 0.5)}}),
                                                     Value::Text(std::to_string(i))})})},
         {"img", Value(MakeArray<int16_t>(DType::kInt16, {2}, {int16_t(i), int16_t(-i)}))}});
  };
  Value out = Stack({make(1), make(2), make(3)});
  const Value& a = out["a"];
  ASSERT_TRUE(a.is<std::shared_ptr<const Sequence>>());
  EXPECT_EQ(a.AsSequence().kind, Sequence::Kind::kList);
  EXPECT_EQ(ArrayValues<int64_t>(a[0].AsArray()), (std::vector<int64_t>{1, 2, 3}));
  const Value& t = a[1];
  EXPECT_EQ(t.AsSequence().kind, Sequence::Kind::kTuple);
  EXPECT_EQ(t.AsSequence().tag, nullptr);
  EXPECT_EQ(ArrayValues<double>(t[0]["b"].AsArray()), (std::vector<double>{0.5, 1.0, 1.5}));
  EXPECT_EQ(t[1].AsSequence().tag, StackedStringsTag());
  EXPECT_EQ(t[1].AsSequence().items,
            (std::vector<Value>{Value::Text("1"), Value::Text("2"), Value::Text("3")}));
  EXPECT_EQ(out["img"].AsArray().shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ArrayValues<int16_t>(out["img"].AsArray()),
            (std::vector<int16_t>{1, -1, 2, -2, 3, -3}));
}

TEST(StackTest, NestedErrorPath) {
  auto make = [](int64_t size) {
    return Value::Dict({{"a", Value::List({Value(0), Value::Tuple({Value::Dict(
                                  {{"b", Value(Array::Allocate(DType::kUint8, {size}))}})})})}});
  };
  std::string msg = StackError({make(3), make(3), make(3), make(4)});
  EXPECT_EQ(msg, "Batch: element 3 differs from element 0 at ['a'][1][0]['b']: uint8[3] vs uint8[4]");
  EXPECT_CONTAINS(msg, "element 3");
  EXPECT_CONTAINS(msg, "['a'][1][0]['b']");
}

TEST(StackTest, KeyWithQuoteIsEscapedInPath) {
  std::string msg = StackError({Value::Dict({{"it's", Value(1)}}),
                                Value::Dict({{"it's", Value::Text("x")}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['it\\'s']: kind int vs str");
}

TEST(StackTest, TagsPreservedFromElementZero) {
  ContainerTag list_tag = std::make_shared<int>(1);
  ContainerTag tuple_tag = std::make_shared<int>(2);
  ContainerTag dict_tag = std::make_shared<int>(3);
  ContainerTag other_tag = std::make_shared<int>(4);
  auto make = [&](int i, const ContainerTag& dt) {
    return TaggedDict({{"l", TaggedList({Value(i)}, list_tag)},
                       {"t", TaggedTuple({Value(i), Value(i)}, tuple_tag)}},
                      dt);
  };
  Value out = Stack({make(1, dict_tag), make(2, other_tag)});
  EXPECT_EQ(out.AsMapping().tag, dict_tag);
  EXPECT_EQ(out["l"].AsSequence().tag, list_tag);
  EXPECT_EQ(out["l"].AsSequence().kind, Sequence::Kind::kList);
  EXPECT_EQ(out["t"].AsSequence().tag, tuple_tag);
  EXPECT_EQ(out["t"].AsSequence().kind, Sequence::Kind::kTuple);
  EXPECT_EQ(ArrayValues<int64_t>(out["t"][1].AsArray()), (std::vector<int64_t>{1, 2}));
}

TEST(StackTest, EmptyContainers) {
  Value out = Stack({Value::Dict({{"l", Value::List({})}, {"d", Value::Dict({})}}),
                     Value::Dict({{"d", Value::Dict({})}, {"l", Value::List({})}})});
  EXPECT_TRUE(out["l"].AsSequence().items.empty());
  EXPECT_TRUE(out["d"].AsMapping().items.empty());
}

// ---------------------------------------------------------------------------------------------
// Opaque values.

TEST(StackTest, TopLevelOpaqueUnpackedOncePerElement) {
  int count = 0;
  std::vector<Value> elements;
  for (int i = 0; i < 4; ++i) {
    elements.push_back(MakeOpaque(Value::Dict({{"x", Value(i)}, {"s", Value::Bytes("b")}}), &count));
  }
  Value out = Stack(elements);
  EXPECT_EQ(count, 4);
  EXPECT_EQ(ArrayValues<int64_t>(out["x"].AsArray()), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(out["s"].AsSequence().items.size(), 4u);
}

TEST(StackTest, OpaqueMixedWithNativeElements) {
  Value out = Stack({Value::Dict({{"x", Value(1)}}), MakeOpaque(Value::Dict({{"x", Value(2)}})),
                     Value::Dict({{"x", Value(3)}})});
  EXPECT_EQ(ArrayValues<int64_t>(out["x"].AsArray()), (std::vector<int64_t>{1, 2, 3}));
}

TEST(StackTest, NestedOpaqueLeavesAreUnpacked) {
  int count = 0;
  auto make = [&](int i) {
    Value img = Value(MakeArray<uint8_t>(DType::kUint8, {2}, {uint8_t(i), uint8_t(i + 1)}));
    return Value::Dict({{"img", MakeOpaque(img, &count)},
                        {"meta", MakeOpaque(Value::Tuple({Value(i), Value::Text("t")}), &count)}});
  };
  // Nested opaque inside an opaque as well.
  Value out = Stack({make(0), make(10), MakeOpaque(make(20), &count)});
  EXPECT_EQ(count, 7);
  EXPECT_EQ(out["img"].AsArray().shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ArrayValues<uint8_t>(out["img"].AsArray()), (std::vector<uint8_t>{0, 1, 10, 11, 20, 21}));
  EXPECT_EQ(out["meta"].AsSequence().kind, Sequence::Kind::kTuple);
  EXPECT_EQ(ArrayValues<int64_t>(out["meta"][0].AsArray()), (std::vector<int64_t>{0, 10, 20}));
}

TEST(StackTest, OpaqueMismatchErrorNamesPath) {
  std::string msg = StackError({Value::Dict({{"o", MakeOpaque(Value(1))}}),
                                Value::Dict({{"o", MakeOpaque(Value::Text("s"))}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['o']: kind int vs str");
}

TEST(StackTest, OpaqueUnpackingToOpaqueIsALeaf) {
  // The inner opaque is a leaf (not unpacked again); it does not match element 0's int.
  EXPECT_EQ(StackError({Value(1), MakeOpaque(MakeOpaque(Value(1)))}),
            "Batch: element 1 differs from element 0 at the root: kind int vs opaque <FakeOpaque>");
  // FakeOpaque keeps the default StackLeaves(), which throws.
  EXPECT_EQ(StackError({MakeOpaque(MakeOpaque(Value(1))), MakeOpaque(MakeOpaque(Value(2)))}),
            "Batch: cannot stack the leaves at the root: cannot stack leaves of kind <FakeOpaque>");
}

// ---------------------------------------------------------------------------------------------
// Opaque leaves (StackLeaves).

// A leaf with no Value-tree form: Unpack() returns itself, StackLeaves() makes an int64 array of
// the payloads (as np.stack would of objects that numpy converts) and records its calls.
class LeafOpaque : public Opaque, public std::enable_shared_from_this<LeafOpaque> {
 public:
  struct Calls {
    int count = 0;
    const Opaque* self = nullptr;
    std::vector<const Opaque*> leaves;
  };
  LeafOpaque(int64_t payload, Calls* calls) : payload_(payload), calls_(calls) {}
  Value Unpack() const override { return Value(std::shared_ptr<const Opaque>(shared_from_this())); }
  std::string Describe() const override { return "<LeafOpaque>"; }
  Value StackLeaves(const std::vector<const Opaque*>& leaves) const override {
    ++calls_->count;
    calls_->self = this;
    calls_->leaves = leaves;
    std::vector<int64_t> payloads;
    for (const Opaque* leaf : leaves) {
      const auto* l = dynamic_cast<const LeafOpaque*>(leaf);
      if (l == nullptr) throw std::invalid_argument("not a LeafOpaque: " + leaf->Describe());
      if (l->payload_ < 0) throw std::invalid_argument("negative payload");
      payloads.push_back(l->payload_);
    }
    return Value(MakeArray<int64_t>(DType::kInt64, {static_cast<int64_t>(leaves.size())},
                                    payloads));
  }

 private:
  int64_t payload_;
  Calls* calls_;
};

Value MakeLeaf(int64_t payload, LeafOpaque::Calls* calls) {
  return Value(std::shared_ptr<const Opaque>(std::make_shared<LeafOpaque>(payload, calls)));
}

TEST(StackTest, OpaqueLeavesAreStackedByElementZerosLeaf) {
  LeafOpaque::Calls calls;
  std::vector<Value> elements;
  for (int i = 0; i < 3; ++i) {
    Value e = Value::Dict({{"o", MakeLeaf(10 + i, &calls)}, {"i", Value(i)}});
    elements.push_back(i == 1 ? MakeOpaque(e) : e);  // also below an unpacked opaque
  }
  Value out = Stack(elements);
  EXPECT_EQ(calls.count, 1);
  EXPECT_EQ(calls.self, elements[0]["o"].as<std::shared_ptr<const Opaque>>().get());
  ASSERT_EQ(calls.leaves.size(), 3u);
  EXPECT_EQ(calls.leaves[0], calls.self);
  EXPECT_EQ(calls.leaves[2], elements[2]["o"].as<std::shared_ptr<const Opaque>>().get());
  EXPECT_EQ(ArrayValues<int64_t>(out["o"].AsArray()), (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(ArrayValues<int64_t>(out["i"].AsArray()), (std::vector<int64_t>{0, 1, 2}));
}

TEST(StackTest, OpaqueLeafMixedWithNativeThrows) {
  LeafOpaque::Calls calls;
  EXPECT_EQ(StackError({Value::List({MakeLeaf(1, &calls)}), Value::List({MakeLeaf(2, &calls)}),
                        Value::List({Value(3)})}),
            "Batch: element 2 differs from element 0 at [0]: kind opaque <LeafOpaque> vs int");
  EXPECT_EQ(StackError({Value::List({Value(3)}), Value::List({MakeLeaf(1, &calls)})}),
            "Batch: element 1 differs from element 0 at [0]: kind int vs opaque <LeafOpaque>");
  EXPECT_EQ(calls.count, 0);
}

TEST(StackTest, StackLeavesErrorNamesPath) {
  LeafOpaque::Calls calls;
  EXPECT_EQ(StackError({Value::Dict({{"k", Value::Tuple({MakeLeaf(1, &calls)})}}),
                        Value::Dict({{"k", Value::Tuple({MakeLeaf(-1, &calls)})}})}),
            "Batch: cannot stack the leaves at ['k'][0]: negative payload");
  // Leaves of different Opaque classes: the implementation decides (here, it throws).
  EXPECT_EQ(StackError({MakeLeaf(1, &calls), MakeOpaque(MakeOpaque(Value(1)))}),
            "Batch: cannot stack the leaves at the root: not a LeafOpaque: <FakeOpaque>");
}

// ---------------------------------------------------------------------------------------------
// dtype promotion and casting (numpy's rules).

TEST(StackPromotionTest, MatchesNumpy) {
  // Expected values are numpy 2.x's np.promote_types.
  struct Case { DType a, b, expected; };
  const Case cases[] = {
      {DType::kInt32, DType::kFloat32, DType::kFloat64},
      {DType::kInt32, DType::kInt64, DType::kInt64},
      {DType::kUint8, DType::kInt8, DType::kInt16},
      {DType::kFloat32, DType::kFloat64, DType::kFloat64},
      {DType::kBool, DType::kInt64, DType::kInt64},
      {DType::kBool, DType::kBool, DType::kBool},
      {DType::kBool, DType::kFloat16, DType::kFloat16},
      {DType::kUint64, DType::kInt64, DType::kFloat64},
      {DType::kUint64, DType::kInt8, DType::kFloat64},
      {DType::kUint32, DType::kInt32, DType::kInt64},
      {DType::kUint16, DType::kInt8, DType::kInt32},
      {DType::kUint32, DType::kUint8, DType::kUint32},
      {DType::kFloat16, DType::kInt8, DType::kFloat16},
      {DType::kFloat16, DType::kUint8, DType::kFloat16},
      {DType::kFloat16, DType::kInt16, DType::kFloat32},
      {DType::kFloat16, DType::kInt32, DType::kFloat64},
      {DType::kFloat32, DType::kInt16, DType::kFloat32},
      {DType::kFloat32, DType::kUint32, DType::kFloat64},
      {DType::kFloat16, DType::kFloat32, DType::kFloat32},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PromoteTypes(c.a, c.b), c.expected) << DTypeName(c.a) << ", " << DTypeName(c.b);
    EXPECT_EQ(PromoteTypes(c.b, c.a), c.expected) << DTypeName(c.b) << ", " << DTypeName(c.a);
  }
  for (int a = 0; a <= static_cast<int>(DType::kFloat64); ++a) {
    const auto da = static_cast<DType>(a);
    EXPECT_EQ(PromoteTypes(da, da), da);
    for (int b = 0; b <= static_cast<int>(DType::kFloat64); ++b) {
      EXPECT_EQ(PromoteTypes(da, static_cast<DType>(b)), PromoteTypes(static_cast<DType>(b), da));
    }
  }
}

TEST(StackPromotionTest, ResultTypeIsOrderIndependentLikeNumpy) {
  // Expected values are numpy 2.x's np.result_type (and np.stack's dtype), any order.
  struct Case { std::vector<DType> dtypes; DType expected; };
  const Case cases[] = {
      {{DType::kInt8, DType::kUint8, DType::kFloat16}, DType::kFloat16},
      {{DType::kInt8, DType::kUint16, DType::kFloat16}, DType::kFloat32},
      {{DType::kInt8, DType::kUint16, DType::kFloat32}, DType::kFloat32},
      {{DType::kInt16, DType::kUint16, DType::kFloat16}, DType::kFloat32},
      {{DType::kInt16, DType::kUint16}, DType::kInt32},
      {{DType::kBool, DType::kUint8, DType::kInt8}, DType::kInt16},
      {{DType::kInt64, DType::kUint64, DType::kFloat32}, DType::kFloat64},
      {{DType::kUint32}, DType::kUint32},
  };
  for (const Case& c : cases) {
    std::vector<DType> d = c.dtypes;
    std::sort(d.begin(), d.end());
    do {
      EXPECT_EQ(ResultType(d), c.expected) << DTypeName(d[0]) << "...";
    } while (std::next_permutation(d.begin(), d.end()));
  }
  // Pairwise it is PromoteTypes.
  EXPECT_EQ(ResultType(std::vector<DType>{DType::kInt8, DType::kUint8}), DType::kInt16);
}

TEST(StackTest, ArrayDtypesPromote) {
  Value out = Stack({Value::List({Value(MakeArray<int32_t>(DType::kInt32, {2}, {1, -2}))}),
                     Value::List({Value(MakeArray<int32_t>(DType::kInt32, {2}, {3, 4}))}),
                     Value::List({Value(MakeArray<float>(DType::kFloat32, {2}, {0.5f, 6.f}))})});
  const Array& a = out[0].AsArray();
  EXPECT_EQ(a.dtype, DType::kFloat64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ArrayValues<double>(a), (std::vector<double>{1, -2, 3, 4, 0.5, 6}));
  // 0-d arrays (numpy scalars) too.
  out = Stack({Value(MakeArray<int32_t>(DType::kInt32, {}, {-5})),
               Value(MakeArray<int64_t>(DType::kInt64, {}, {int64_t{1} << 40}))});
  EXPECT_EQ(out.AsArray().dtype, DType::kInt64);
  EXPECT_EQ(ArrayValues<int64_t>(out.AsArray()), (std::vector<int64_t>{-5, int64_t{1} << 40}));
  // uint8 with int8 -> int16 (values kept, not reinterpreted).
  out = Stack({Value(MakeArray<uint8_t>(DType::kUint8, {2}, {200, 255})),
               Value(MakeArray<int8_t>(DType::kInt8, {2}, {-1, -128}))});
  EXPECT_EQ(out.AsArray().dtype, DType::kInt16);
  EXPECT_EQ(ArrayValues<int16_t>(out.AsArray()), (std::vector<int16_t>{200, 255, -1, -128}));
}

TEST(StackTest, PromotionInSeveralStepsKeepsValues) {
  // uint8, int8 -> int16; + float32 -> float32; + int32 -> float64; late, below the root.
  auto make = [](Array a) { return Value::Dict({{"x", Value::Tuple({Value(std::move(a))})}}); };
  std::vector<Value> elements;
  for (int i = 0; i < 5; ++i) elements.push_back(make(MakeArray<uint8_t>(DType::kUint8, {2}, {200, 255})));
  elements.push_back(make(MakeArray<int8_t>(DType::kInt8, {2}, {-1, -128})));
  elements.push_back(make(MakeArray<float>(DType::kFloat32, {2}, {0.5f, -2.25f})));
  elements.push_back(make(MakeArray<uint8_t>(DType::kUint8, {2}, {7, 8})));
  elements.push_back(make(MakeArray<int32_t>(DType::kInt32, {2}, {2147483647, -2147483647 - 1})));
  elements.push_back(make(MakeArray<int8_t>(DType::kInt8, {2}, {-9, 10})));
  Value out = Stack(elements);
  const Array& a = out["x"][0].AsArray();
  EXPECT_EQ(a.dtype, DType::kFloat64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{10, 2}));
  std::vector<double> expected;
  for (int i = 0; i < 5; ++i) expected.insert(expected.end(), {200, 255});
  expected.insert(expected.end(), {-1, -128, 0.5, -2.25, 7, 8, 2147483647.0, -2147483648.0, -9, 10});
  EXPECT_EQ(ArrayValues<double>(a), expected);
}

TEST(StackTest, PromotionDependsOnTheSetOfDtypesNotTheOrder) {
  // np.stack([np.int8(-3), np.uint8(200), np.float16(1.5)]) is float16 in any order, though
  // promote_types(promote_types(int8, uint8), float16) is float32.
  const Value i8 = Value(MakeArray<int8_t>(DType::kInt8, {}, {-3}));
  const Value u8 = Value(MakeArray<uint8_t>(DType::kUint8, {}, {200}));
  const Value f16 = Value(MakeArray<uint16_t>(DType::kFloat16, {}, {0x3E00}));  // 1.5
  for (const auto& elements : {std::vector<Value>{i8, u8, f16}, std::vector<Value>{f16, u8, i8},
                               std::vector<Value>{u8, f16, i8}}) {
    Value out = Stack(elements);
    EXPECT_EQ(out.AsArray().dtype, DType::kFloat16);
    std::vector<uint16_t> bits = ArrayValues<uint16_t>(out.AsArray());
    std::vector<uint16_t> expected;
    for (const Value& e : elements) expected.push_back(e == i8 ? 0xC200 : e == u8 ? 0x5A40 : 0x3E00);
    EXPECT_EQ(bits, expected);  // -3, 200, 1.5 as float16
  }
}

TEST(StackTest, Int64WithUint64IsFloat64) {
  Value out = Stack({Value(int64_t{-1}),
                     Value(MakeArray<uint64_t>(DType::kUint64, {}, {~uint64_t{0}})),
                     Value((int64_t{1} << 53) + 1)});
  EXPECT_EQ(out.AsArray().dtype, DType::kFloat64);
  // As numpy: 2^64 - 1 and 2^53 + 1 round to nearest double.
  EXPECT_EQ(ArrayValues<double>(out.AsArray()),
            (std::vector<double>{-1.0, 18446744073709551616.0, 9007199254740992.0}));
}

TEST(StackTest, EmptyArraysPromote) {
  Value out = Stack({Value(Array::Allocate(DType::kInt32, {0, 2})),
                     Value(Array::Allocate(DType::kFloat32, {0, 2}))});
  EXPECT_EQ(out.AsArray().dtype, DType::kFloat64);
  EXPECT_EQ(out.AsArray().shape, (std::vector<int64_t>{2, 0, 2}));
}

template <typename To, typename From>
std::vector<To> Cast(DType from, DType to, const std::vector<From>& values) {
  std::vector<To> out(values.size());
  CastElements(from, values.data(), to, out.data(), values.size());
  return out;
}

TEST(StackCastTest, IntegersAndFloats) {
  // Expected values are numpy's astype results.
  EXPECT_EQ((Cast<int8_t, int64_t>(DType::kInt64, DType::kInt8, {300, -129, 5})),
            (std::vector<int8_t>{44, 127, 5}));
  EXPECT_EQ((Cast<int64_t, uint32_t>(DType::kUint32, DType::kInt64, {4294967295u, 0})),
            (std::vector<int64_t>{4294967295, 0}));
  EXPECT_EQ((Cast<float, uint64_t>(DType::kUint64, DType::kFloat32, {~uint64_t{0}})),
            (std::vector<float>{18446744073709551616.f}));
  EXPECT_EQ((Cast<float, double>(DType::kFloat64, DType::kFloat32, {0.1, 1e300})),
            (std::vector<float>{0.1f, std::numeric_limits<float>::infinity()}));
  EXPECT_EQ((Cast<double, uint8_t>(DType::kBool, DType::kFloat64, {0, 1, 2})),
            (std::vector<double>{0, 1, 1}));  // any non-zero byte is true
  EXPECT_EQ((Cast<uint8_t, float>(DType::kFloat32, DType::kBool,
                                  {std::nanf(""), 0.f, -0.f, 0.25f})),
            (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ((Cast<uint8_t, int16_t>(DType::kInt16, DType::kBool, {0, 256, -1})),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_THROW((Cast<int32_t, float>(DType::kFloat32, DType::kInt32, {1.f})),
               std::invalid_argument);
  EXPECT_THROW((Cast<uint16_t, uint16_t>(DType::kFloat16, DType::kUint16, {0})),
               std::invalid_argument);
}

uint16_t ToHalf(double d) { return Cast<uint16_t, double>(DType::kFloat64, DType::kFloat16, {d})[0]; }
uint16_t FloatToHalf(float f) {
  return Cast<uint16_t, float>(DType::kFloat32, DType::kFloat16, {f})[0];
}
float HalfToFloat(uint16_t h) { return Cast<float, uint16_t>(DType::kFloat16, DType::kFloat32, {h})[0]; }

TEST(StackCastTest, HalfToFloat) {
  EXPECT_EQ(std::bit_cast<uint32_t>(HalfToFloat(0x0000)), 0u);
  EXPECT_EQ(std::bit_cast<uint32_t>(HalfToFloat(0x8000)), 0x80000000u);  // -0
  EXPECT_EQ(HalfToFloat(0x0001), 0x1p-24f);                   // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x8001), -0x1p-24f);
  EXPECT_EQ(HalfToFloat(0x03FF), 1023 * 0x1p-24f);            // largest subnormal
  EXPECT_EQ(HalfToFloat(0x0400), 0x1p-14f);                   // smallest normal
  EXPECT_EQ(HalfToFloat(0x3C00), 1.f);
  EXPECT_EQ(HalfToFloat(0x3C01), 1.f + 0x1p-10f);
  EXPECT_EQ(HalfToFloat(0xC000), -2.f);
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.f);                    // largest finite
  EXPECT_EQ(HalfToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(HalfToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7C01)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0xFE00)));
  EXPECT_EQ((Cast<double, uint16_t>(DType::kFloat16, DType::kFloat64, {0x3555})),
            (std::vector<double>{0x1.554p-2}));  // 0.333251953125
}

TEST(StackCastTest, FloatToHalfRoundsToNearestEven) {
  // Expected bits are numpy's astype(np.float16).
  EXPECT_EQ(FloatToHalf(0.f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.f), 0xC000);
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);          // tie between 0 and 2^-24: to even (0)
  EXPECT_EQ(FloatToHalf(-0x1p-25f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.5f * 0x1p-25f), 0x0001);
  EXPECT_EQ(FloatToHalf(3 * 0x1p-25f), 0x0002);      // tie between 1 and 2 (x 2^-24): to 2
  EXPECT_EQ(FloatToHalf(0x1p-26f), 0x0000);
  EXPECT_EQ(FloatToHalf(1e-30f), 0x0000);
  EXPECT_EQ(FloatToHalf(1023 * 0x1p-24f), 0x03FF);
  EXPECT_EQ(FloatToHalf(0x1p-14f - 0x1p-25f), 0x0400);  // tie rounds up into the normals
  EXPECT_EQ(FloatToHalf(1.f + 0x1p-11f), 0x3C00);       // tie: to even
  EXPECT_EQ(FloatToHalf(1.f + 3 * 0x1p-11f), 0x3C02);   // tie: to even
  EXPECT_EQ(FloatToHalf(1.f + 0x1p-11f + 0x1p-20f), 0x3C01);
  EXPECT_EQ(FloatToHalf(65504.f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65519.f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.f), 0x7C00);  // tie between 65504 and 2^16: to inf
  EXPECT_EQ(FloatToHalf(-65520.f), 0xFC00);
  EXPECT_EQ(FloatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
  const uint16_t nan = FloatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  // A NaN whose payload is only in the low bits stays a NaN.
  const uint16_t low_nan = FloatToHalf(std::bit_cast<float>(0x7F800001u));
  EXPECT_EQ(low_nan & 0x7C00, 0x7C00);
  EXPECT_NE(low_nan & 0x03FF, 0);
  // float64 -> float16 rounds once: through float32 this would be a tie rounded to 0x3C00.
  EXPECT_EQ(ToHalf(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);
  EXPECT_EQ(ToHalf(1e-300), 0x0000);
  EXPECT_EQ(ToHalf(-1e300), 0xFC00);
}

TEST(StackCastTest, HalfRoundTripAndMidpointsExhaustive) {
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // every finite non-negative half
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    ASSERT_EQ(FloatToHalf(f), h);
    ASSERT_EQ(FloatToHalf(-f), h | 0x8000);
    if (h + 1 == 0x7C00) break;
    const double next = HalfToFloat(static_cast<uint16_t>(h + 1));
    const double mid = (f + next) / 2;  // exact in double
    ASSERT_EQ(ToHalf(mid), (h & 1) == 0 ? h : h + 1) << std::hex << h;
    ASSERT_EQ(ToHalf(std::nextafter(mid, 0.0)), h) << std::hex << h;
    ASSERT_EQ(ToHalf(std::nextafter(mid, 1e9)), h + 1) << std::hex << h;
  }
  // Integers (int8 / uint8 promote to float16 exactly).
  EXPECT_EQ((Cast<uint16_t, int8_t>(DType::kInt8, DType::kFloat16, {-128, 0, 127})),
            (std::vector<uint16_t>{0xD800, 0x0000, 0x57F0}));
  EXPECT_EQ((Cast<uint16_t, int64_t>(DType::kInt64, DType::kFloat16, {65520, 2049})),
            (std::vector<uint16_t>{0x7C00, 0x6800}));  // 2049 ties to 2048
}

// ---------------------------------------------------------------------------------------------
// Large batch and the hot path.

std::vector<Value> ImageLabelBatch(int n) {
  std::vector<Value> elements;
  elements.reserve(n);
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> px(784);
    for (int j = 0; j < 784; ++j) px[j] = static_cast<uint8_t>(i * 31 + j * 7);
    elements.push_back(Value::Dict({{"image", Value(MakeArray<uint8_t>(DType::kUint8, {784}, px))},
                                    {"label", Value(i % 10)}}));
  }
  return elements;
}

TEST(StackTest, LargeBatchBytesMatch) {
  constexpr int kN = 128;
  std::vector<Value> elements = ImageLabelBatch(kN);
  Value out = Stack(elements);
  const Array& img = out["image"].AsArray();
  EXPECT_EQ(img.dtype, DType::kUint8);
  EXPECT_EQ(img.shape, (std::vector<int64_t>{kN, 784}));
  for (int i = 0; i < kN; ++i) {
    const Array& src = elements[i]["image"].AsArray();
    ASSERT_EQ(std::memcmp(img.data + i * 784, src.data, 784), 0) << "element " << i;
    ASSERT_NE(img.data + i * 784, src.data);  // copied, not aliased
  }
  const Array& label = out["label"].AsArray();
  EXPECT_EQ(label.dtype, DType::kInt64);
  EXPECT_EQ(label.shape, (std::vector<int64_t>{kN}));
  std::vector<int64_t> labels = ArrayValues<int64_t>(label);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(labels[i], i % 10);
  // Inputs are untouched.
  EXPECT_EQ(elements[5]["label"].AsInt(), 5);
}

}  // namespace
}  // namespace spelt
