// Tests for Stack() and StackedStringsTag() (spelt/batch.h).
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/batch.h"
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

TEST(StackTest, BoolMixedWithIntThrows) {
  std::string msg = StackError({Value(true), Value(false), Value(1)});
  EXPECT_EQ(msg, "Batch: element 2 differs from element 0 at the root: kind bool vs int");
  msg = StackError({Value(1), Value(true)});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at the root: kind int vs bool");
  msg = StackError({Value(1.5), Value(true)});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at the root: kind float vs bool");
}

TEST(StackTest, NumberMixedWithArrayThrows) {
  std::string msg =
      StackError({Value::Dict({{"a", Value(MakeArray<int32_t>(DType::kInt32, {}, {1}))}}),
                  Value::Dict({{"a", Value(2)}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['a']: kind array vs int");
  msg = StackError({Value::Dict({{"a", Value(2)}}),
                    Value::Dict({{"a", Value(MakeArray<int32_t>(DType::kInt32, {}, {1}))}})});
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

TEST(StackTest, ArrayDtypeMismatchThrowsWithoutUpcast) {
  std::string msg = StackError({Value::List({Value(Array::Allocate(DType::kInt32, {2}))}),
                                Value::List({Value(Array::Allocate(DType::kInt32, {2}))}),
                                Value::List({Value(Array::Allocate(DType::kFloat32, {2}))})});
  EXPECT_EQ(msg, "Batch: element 2 differs from element 0 at [0]: int32[2] vs float32[2]");
  // 0-d arrays (numpy scalars) too.
  msg = StackError({Value(Array::Allocate(DType::kInt32, {})),
                    Value(Array::Allocate(DType::kInt64, {}))});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at the root: int32[] vs int64[]");
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

TEST(StackTest, NoneEverywhereStaysNone) {
  Value out = Stack({Value::Dict({{"a", Value()}, {"b", Value(1)}}),
                     Value::Dict({{"a", Value()}, {"b", Value(2)}})});
  EXPECT_TRUE(out["a"].is_none());
  EXPECT_EQ(ArrayValues<int64_t>(out["b"].AsArray()), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(Stack({Value(), Value()}).is_none());
}

TEST(StackTest, NoneMixedWithValueThrows) {
  std::string msg = StackError({Value::Dict({{"a", Value()}}), Value::Dict({{"a", Value(1)}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['a']: kind none vs int");
  msg = StackError({Value::Dict({{"a", Value(1)}}), Value::Dict({{"a", Value()}})});
  EXPECT_EQ(msg, "Batch: element 1 differs from element 0 at ['a']: kind int vs none");
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
  auto make = [](DType dt) {
    return Value::Dict({{"a", Value::List({Value(0), Value::Tuple({Value::Dict(
                                                  {{"b", Value(Array::Allocate(dt, {3}))}})})})}});
  };
  std::string msg = StackError({make(DType::kUint8), make(DType::kUint8), make(DType::kUint8),
                                make(DType::kInt8)});
  EXPECT_EQ(msg, "Batch: element 3 differs from element 0 at ['a'][1][0]['b']: uint8[3] vs int8[3]");
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

TEST(StackTest, OpaqueUnpackingToOpaqueThrows) {
  std::string msg = StackError({Value(1), MakeOpaque(MakeOpaque(Value(1)))});
  EXPECT_CONTAINS(msg, "element 1");
  EXPECT_CONTAINS(msg, "<FakeOpaque>");
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
