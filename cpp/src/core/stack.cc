// Implementation of spelt/stack.h (Stack() and numpy's dtype promotion and casting), and of the
// default Opaque::StackLeaves() from spelt/value.h.
//
// Stack algorithm (one walk per element, no per-leaf string building on the happy path):
//  1. Element 0 is walked once to build a plan tree mirroring its structure. Each array or
//     scalar leaf gets its output array allocated right away (shape [n, S...], element 0's
//     dtype) and element 0's leaf is copied into slot 0.
//  2. Elements 1..n-1 are walked in order against the plan: each node is checked against the
//     plan (kind, length, dict keys, shape) and each leaf memcpy'd into its slot. The first
//     mismatch throws, so the error names the lowest-index element that differs (and, within
//     it, the first differing leaf in tree order). A leaf whose dtype differs from the output's
//     takes the slow path: the output's dtype becomes the result type of all dtypes seen so far
//     (converting the slots already written) and the leaf is converted into its slot.
//  3. The plan is turned into the output Value (containers take element 0's kind, tag and
//     key order; Opaque leaves are stacked by StackLeaves()).
// The leaf path for messages is kept as a stack of (key pointer | index) and only formatted
// when throwing. Opaque values (top level or nested) are Unpack()ed exactly once each.
#include "spelt/stack.h"

#include <atomic>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace spelt {

Value Opaque::StackLeaves(const std::vector<const Opaque*>& /*leaves*/) const {
  throw std::invalid_argument("cannot stack leaves of kind " + Describe());
}

const ContainerTag& StackedStringsTag() {
  static const int kMarker = 0;
  // Aliases a static object with a no-op deleter: never null, never freed, same for everyone.
  static const ContainerTag tag(&kMarker, [](const void*) {});
  return tag;
}

// ---------------------------------------------------------------------------------------------
// dtype promotion.

namespace {

constexpr size_t kNumDTypes = 12;
static_assert(static_cast<size_t>(DType::kFloat64) + 1 == kNumDTypes);

constexpr size_t Index(DType d) { return static_cast<size_t>(d); }

// np.promote_types(a, b) as kPromote[a][b], rows and columns in DType order. Generated with
// numpy 2.4.6:
//   names = ['bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',
//            'uint64', 'float16', 'float32', 'float64']
//   for a in names: print([np.promote_types(a, b).str[1:] for b in names], a)
// (printed as numpy's short codes: b1 -> b, i1..i8, u1..u8, f2..f8).
struct PromotionTable {
  DType t[kNumDTypes][kNumDTypes];
};
constexpr PromotionTable kPromote = [] {
  constexpr DType b = DType::kBool;
  constexpr DType i1 = DType::kInt8, i2 = DType::kInt16, i4 = DType::kInt32, i8 = DType::kInt64;
  constexpr DType u1 = DType::kUint8, u2 = DType::kUint16, u4 = DType::kUint32,
                  u8 = DType::kUint64;
  constexpr DType f2 = DType::kFloat16, f4 = DType::kFloat32, f8 = DType::kFloat64;
  return PromotionTable{{
      // b   i1  i2  i4  i8  u1  u2  u4  u8  f2  f4  f8
      {b,  i1, i2, i4, i8, u1, u2, u4, u8, f2, f4, f8},  // bool
      {i1, i1, i2, i4, i8, i2, i4, i8, f8, f2, f4, f8},  // int8
      {i2, i2, i2, i4, i8, i2, i4, i8, f8, f4, f4, f8},  // int16
      {i4, i4, i4, i4, i8, i4, i4, i8, f8, f8, f8, f8},  // int32
      {i8, i8, i8, i8, i8, i8, i8, i8, f8, f8, f8, f8},  // int64
      {u1, i2, i2, i4, i8, u1, u2, u4, u8, f2, f4, f8},  // uint8
      {u2, i4, i4, i4, i8, u2, u2, u4, u8, f4, f4, f8},  // uint16
      {u4, i8, i8, i8, i8, u4, u4, u4, u8, f8, f8, f8},  // uint32
      {u8, f8, f8, f8, f8, u8, u8, u8, u8, f8, f8, f8},  // uint64
      {f2, f2, f4, f8, f8, f2, f4, f8, f8, f2, f4, f8},  // float16
      {f4, f4, f4, f8, f8, f4, f4, f8, f8, f4, f4, f8},  // float32
      {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},  // float64
  }};
}();

// numpy's type number of each DType (np.dtype(name).num on Linux), which ranks the "main"
// dtype of a promotion: float16 (23) is last, after float32 (11) and float64 (12).
constexpr int kNumpyTypeNum[kNumDTypes] = {0, 1, 3, 5, 7, 2, 4, 6, 8, 23, 11, 12};

// A set of dtypes: bit Index(d) for each d.
using DTypeSet = uint16_t;
constexpr DTypeSet Bit(DType d) { return static_cast<DTypeSet>(1u << Index(d)); }

// np.result_type of a non-empty set of dtypes. numpy (PyArray_PromoteDTypeSequence) makes it
// order-independent by promoting every dtype with the "main" one (the highest type number)
// and reducing those results; checked against np.result_type for all 4095 sets.
DType ResultTypeOf(DTypeSet set) {
  size_t main = 0;
  int main_num = -1;
  for (size_t d = 0; d < kNumDTypes; ++d) {
    if ((set >> d & 1) != 0 && kNumpyTypeNum[d] > main_num) {
      main = d;
      main_num = kNumpyTypeNum[d];
    }
  }
  DType result = static_cast<DType>(main);
  for (size_t d = 0; d < kNumDTypes; ++d) {
    if ((set >> d & 1) != 0) result = kPromote.t[Index(result)][Index(kPromote.t[main][d])];
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Casting.

// Storage of kBool (any non-zero byte reads as true) and kFloat16 (IEEE binary16 bits).
struct Bool { uint8_t byte; };
struct Half { uint16_t bits; };
static_assert(sizeof(Bool) == 1 && sizeof(Half) == 2);

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float f = static_cast<float>(mant) * 0x1p-24f;
    return sign != 0 ? -f : f;
  }
  const uint32_t bits = exp == 0x1f ? sign | 0x7f800000u | (mant << 13)  // inf, NaN (payload kept)
                                    : sign | ((exp + (127 - 15)) << 23) | (mant << 13);
  return std::bit_cast<float>(bits);
}

// x / 2^shift rounded to nearest, ties to even. REQUIRES: 1 <= shift <= 63.
uint64_t ShiftRightRoundingToEven(uint64_t x, int shift) {
  const uint64_t q = x >> shift;
  const uint64_t rem = x & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  return q + ((rem > half || (rem == half && (q & 1) != 0)) ? 1 : 0);
}

// The nearest binary16 (ties to even; beyond the largest finite half -> inf), as numpy's
// npy_double_to_half. A float goes through this exactly (float -> double is exact), so it is
// rounded once.
uint16_t HalfFromDouble(double d) {
  const uint64_t bits = std::bit_cast<uint64_t>(d);
  const auto sign = static_cast<uint16_t>((bits >> 48) & 0x8000u);
  const int exp = static_cast<int>((bits >> 52) & 0x7ffu);  // biased by 1023
  const uint64_t mant = bits & ((uint64_t{1} << 52) - 1);
  if (exp == 0x7ff) {  // inf, or NaN: keeps the top of its payload and stays a NaN
    const auto payload = static_cast<uint16_t>(mant >> 42);
    return static_cast<uint16_t>(sign | 0x7c00u | (mant != 0 && payload == 0 ? 1u : payload));
  }
  if (exp >= 1023 + 16) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 2^16: inf
  if (exp < 1023 - 14) {
    // Below the smallest normal half (2^-14): a multiple of 2^-24 (a subnormal, zero, or
    // rounding up to 2^-14). |d| = (2^52 + mant) * 2^(exp - 1075) = q * 2^-24.
    const int shift = 1051 - exp;  // >= 43
    if (shift > 53) return sign;   // |d| < 2^-25 (or a double subnormal): rounds to 0
    return static_cast<uint16_t>(sign |
                                 ShiftRightRoundingToEven((uint64_t{1} << 52) | mant, shift));
  }
  // A normal half: exponent exp - 1008 in [1, 30] and the top 10 bits of mant, rounded on the
  // other 42; a carry out of the mantissa increments the exponent (up to inf above 65504).
  const uint64_t exp_and_mant = (static_cast<uint64_t>(exp - (1023 - 15)) << 52) | mant;
  return static_cast<uint16_t>(sign | ShiftRightRoundingToEven(exp_and_mant, 42));
}

// The arithmetic value of a stored element.
template <typename T> T Load(T x) { return x; }
bool Load(Bool x) { return x.byte != 0; }
float Load(Half x) { return HalfToFloat(x.bits); }

// An arithmetic value as an element of type To, with C conversion rules.
template <typename To, typename A> To StoreAs(A x) {
  if constexpr (std::is_same_v<To, Bool>) {
    return Bool{static_cast<uint8_t>(x != A{0} ? 1 : 0)};
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half{HalfFromDouble(static_cast<double>(x))};
  } else {
    return static_cast<To>(x);
  }
}

template <typename From, typename To>
void CastLoop(const std::byte* src, std::byte* dst, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    From x;
    std::memcpy(&x, src + k * sizeof(From), sizeof(From));
    const To y = StoreAs<To>(Load(x));
    std::memcpy(dst + k * sizeof(To), &y, sizeof(To));
  }
}

// Calls f(T{}) with T the storage type of `d`.
template <typename F> void VisitDType(DType d, F&& f) {
  switch (d) {
    case DType::kBool: return f(Bool{});
    case DType::kInt8: return f(int8_t{});
    case DType::kInt16: return f(int16_t{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kUint8: return f(uint8_t{});
    case DType::kUint16: return f(uint16_t{});
    case DType::kUint32: return f(uint32_t{});
    case DType::kUint64: return f(uint64_t{});
    case DType::kFloat16: return f(Half{});
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
  }
  throw std::invalid_argument("unknown dtype");
}

bool IsFloat(DType d) { return d == DType::kFloat16 || d == DType::kFloat32 || d == DType::kFloat64; }

}  // namespace

DType PromoteTypes(DType a, DType b) { return kPromote.t[Index(a)][Index(b)]; }

DType ResultType(std::span<const DType> dtypes) {
  if (dtypes.empty()) throw std::invalid_argument("ResultType: no dtypes");
  DTypeSet set = 0;
  for (DType d : dtypes) set |= Bit(d);
  return ResultTypeOf(set);
}

void CastElements(DType from, const void* src, DType to, void* dst, size_t count) {
  if (from == to) {
    if (count != 0) std::memcpy(dst, src, count * ItemSize(from));
    return;
  }
  if (IsFloat(from) && !IsFloat(to) && to != DType::kBool) {
    throw std::invalid_argument("CastElements: cannot cast " + std::string(DTypeName(from)) +
                                " to " + std::string(DTypeName(to)));
  }
  const auto* s = static_cast<const std::byte*>(src);
  auto* t = static_cast<std::byte*>(dst);
  VisitDType(from, [&](auto f) {
    VisitDType(to, [&](auto g) { CastLoop<decltype(f), decltype(g)>(s, t, count); });
  });
}

// ---------------------------------------------------------------------------------------------
// Stack.

namespace {

// Thrown inside Stack() when a leaf includes None (caught by Stack()).
struct NeedsObjectArray : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

std::atomic<ObjectStackFn> object_stack_fallback{nullptr};
std::atomic<TreeSemanticsFn> tree_semantics_resolver{nullptr};
// CurrentTreeSemantics(): -1 until resolved, then the TreeSemantics value.
std::atomic<int> tree_semantics{-1};

enum class NodeKind : uint8_t { kNone, kString, kArray, kOpaque, kSequence, kMapping };

// One node of the plan: what element 0 looks like at this position, and the output being built.
struct Node {
  NodeKind kind = NodeKind::kNone;
  std::string_view kind_name;  // element 0's KindName() (string literal; safe to keep)
  bool is_text = false;        // kString: str (true) or bytes
  // kArray (array leaves, and bool / int / float scalars as 0-d arrays):
  bool is_array0 = false;            // element 0's leaf is an array (not a scalar)
  DType dtype0 = DType::kUint8;      // element 0's dtype
  DTypeSet dtypes_seen = 0;          // the dtypes of the leaves so far
  std::vector<int64_t> shape;        // element 0's shape
  size_t leaf_elements = 0;          // elements per leaf
  size_t leaf_bytes = 0;             // bytes per leaf in out.dtype
  Array out;                         // the stacked output; out.dtype = ResultTypeOf(dtypes_seen)
  std::vector<Value> strings;                          // kString: the stacked strings
  std::vector<std::shared_ptr<const Opaque>> opaques;  // kOpaque: the leaves
  std::shared_ptr<const Sequence> seq;  // kSequence: element 0's sequence (kind, tag, length)
  std::shared_ptr<const Mapping> map;   // kMapping: element 0's mapping (keys, tag)
  std::vector<Node> children;
};

// A bool / int / float scalar or an array leaf, viewed as an array.
struct NumericLeaf {
  DType dtype;
  bool is_array;
  std::span<const int64_t> shape;
  const std::byte* data;
};

// Build() switches on the variant index; pin the alternatives' order.
using V = Value::Variant;
static_assert(std::is_same_v<std::variant_alternative_t<0, V>, Value::None>);
static_assert(std::is_same_v<std::variant_alternative_t<1, V>, bool>);
static_assert(std::is_same_v<std::variant_alternative_t<2, V>, int64_t>);
static_assert(std::is_same_v<std::variant_alternative_t<3, V>, double>);
static_assert(std::is_same_v<std::variant_alternative_t<4, V>, String>);
static_assert(std::is_same_v<std::variant_alternative_t<5, V>, Array>);
static_assert(std::is_same_v<std::variant_alternative_t<6, V>, std::shared_ptr<const Sequence>>);
static_assert(std::is_same_v<std::variant_alternative_t<7, V>, std::shared_ptr<const Mapping>>);
static_assert(std::is_same_v<std::variant_alternative_t<8, V>, std::shared_ptr<const Opaque>>);
// A bool scalar is read in place as a kBool element (one byte, 0 or 1).
static_assert(sizeof(bool) == 1);

// Views `var` as a numeric leaf; false if it is not one.
bool AsNumeric(const V& var, NumericLeaf& leaf) {
  switch (var.index()) {
    case 1:
      leaf = {DType::kBool, false, {}, reinterpret_cast<const std::byte*>(&std::get<1>(var))};
      return true;
    case 2:
      leaf = {DType::kInt64, false, {}, reinterpret_cast<const std::byte*>(&std::get<2>(var))};
      return true;
    case 3:
      leaf = {DType::kFloat64, false, {}, reinterpret_cast<const std::byte*>(&std::get<3>(var))};
      return true;
    case 5: {
      const Array& a = std::get<5>(var);
      leaf = {a.dtype, true, a.shape, a.data};
      return true;
    }
    default:
      return false;
  }
}

struct PathElem {
  const std::string* key;  // non-null: a dict key
  size_t index;            // otherwise: a sequence index
};

std::string QuoteKey(std::string_view key) {
  std::string s = "'";
  for (char c : key) {
    if (c == '\\' || c == '\'') s += '\\';
    s += c;
  }
  return s + "'";
}

class Stacker {
 public:
  Stacker(size_t n, bool jax) : n_(n), jax_(jax) { path_.reserve(16); }

  // Builds the plan from element 0 and writes its leaves into slot 0.
  void Build(Node& node, const Value& in) {
    Value unpacked;
    const Value& v = Resolve(in, unpacked);
    node.kind_name = v.KindName();
    const auto& var = v.variant();
    NumericLeaf leaf;
    if (AsNumeric(var, leaf)) {
      BuildArray(node, leaf);
      return;
    }
    switch (var.index()) {
      case 0:  // None
        node.kind = NodeKind::kNone;
        return;
      case 4: {  // String
        const String& s = std::get<String>(var);
        node.kind = NodeKind::kString;
        node.is_text = s.is_text;
        node.strings.reserve(n_);
        node.strings.emplace_back(s);
        return;
      }
      case 6: {  // Sequence
        node.kind = NodeKind::kSequence;
        node.seq = std::get<std::shared_ptr<const Sequence>>(var);
        const auto& items = node.seq->items;
        node.children.resize(items.size());
        for (size_t k = 0; k < items.size(); ++k) {
          path_.push_back({nullptr, k});
          Build(node.children[k], items[k]);
          path_.pop_back();
        }
        return;
      }
      case 7: {  // Mapping
        node.kind = NodeKind::kMapping;
        node.map = std::get<std::shared_ptr<const Mapping>>(var);
        const auto& items = node.map->items;
        node.children.resize(items.size());
        for (size_t k = 0; k < items.size(); ++k) {
          path_.push_back({&items[k].first, 0});
          Build(node.children[k], items[k].second);
          path_.pop_back();
        }
        return;
      }
      case 8:  // Opaque (one that unpacked to an Opaque)
        node.kind = NodeKind::kOpaque;
        node.opaques.reserve(n_);
        node.opaques.push_back(std::get<std::shared_ptr<const Opaque>>(var));
        return;
      default:
        break;
    }
    throw std::logic_error("Batch: unexpected value kind");
  }

  // Checks element `i` (i >= 1) against the plan and writes its leaves into slot i.
  void Fill(Node& node, const Value& in, size_t i) {
    Value unpacked;
    const Value& v = Resolve(in, unpacked);
    const auto& var = v.variant();
    if (v.is_none() && node.kind != NodeKind::kNone) NeedsObjects();
    switch (node.kind) {
      case NodeKind::kNone:
        if (v.is_none()) return;
        if (jax_) Fail(i, "None (an empty subtree) vs " + std::string(v.KindName()));
        NeedsObjects();
      case NodeKind::kArray: {
        NumericLeaf leaf;
        if (!AsNumeric(var, leaf)) KindMismatch(node, v, i);
        if (leaf.dtype != node.out.dtype || !std::ranges::equal(leaf.shape, node.shape))
            [[unlikely]] {
          FillConverted(node, leaf, v, i);
        } else if (node.leaf_bytes != 0) {
          std::memcpy(node.out.mutable_data() + i * node.leaf_bytes, leaf.data, node.leaf_bytes);
        }
        return;
      }
      case NodeKind::kString: {
        const String* s = std::get_if<String>(&var);
        if (s == nullptr || s->is_text != node.is_text) KindMismatch(node, v, i);
        node.strings.emplace_back(*s);
        return;
      }
      case NodeKind::kOpaque: {
        const auto* op = std::get_if<std::shared_ptr<const Opaque>>(&var);
        if (op == nullptr) KindMismatch(node, v, i);
        node.opaques.push_back(*op);
        return;
      }
      case NodeKind::kSequence: {
        const auto* sp = std::get_if<std::shared_ptr<const Sequence>>(&var);
        if (sp == nullptr || (*sp)->kind != node.seq->kind) KindMismatch(node, v, i);
        if (jax_ && (*sp)->tag.get() != node.seq->tag.get()) {
          Fail(i, std::string(node.kind_name) + "s of different types or pytree structures");
        }
        const auto& items = (*sp)->items;
        if (items.size() != node.children.size()) {
          Fail(i, std::string(node.kind_name) + " of length " +
                      std::to_string(node.children.size()) + " vs " +
                      std::to_string(items.size()));
        }
        for (size_t k = 0; k < items.size(); ++k) {
          path_.push_back({nullptr, k});
          Fill(node.children[k], items[k], i);
          path_.pop_back();
        }
        return;
      }
      case NodeKind::kMapping: {
        const auto* mp = std::get_if<std::shared_ptr<const Mapping>>(&var);
        if (mp == nullptr) KindMismatch(node, v, i);
        const Mapping& m = **mp;
        const auto& keys0 = node.map->items;
        if (m.items.size() != keys0.size()) KeysMismatch(node, m, i);
        for (size_t k = 0; k < keys0.size(); ++k) {
          const std::string& key = keys0[k].first;
          // Fast path: same key at the same position (the usual case); else look it up.
          const Value* child = m.items[k].first == key ? &m.items[k].second : m.Find(key);
          if (child == nullptr) KeysMismatch(node, m, i);
          path_.push_back({&key, 0});
          Fill(node.children[k], *child, i);
          path_.pop_back();
        }
        return;
      }
    }
  }

  // Turns the filled plan into the output value.
  Value Finish(Node& node) {
    switch (node.kind) {
      case NodeKind::kNone:
        if (jax_) return Value();
        NeedsObjects();
      case NodeKind::kArray:
        return Value(std::move(node.out));
      case NodeKind::kString:
        return Value(std::make_shared<const Sequence>(
            Sequence{Sequence::Kind::kList, std::move(node.strings), StackedStringsTag()}));
      case NodeKind::kOpaque:
        return StackOpaque(node);
      case NodeKind::kSequence: {
        std::vector<Value> items;
        items.reserve(node.children.size());
        for (size_t k = 0; k < node.children.size(); ++k) {
          path_.push_back({nullptr, k});
          items.push_back(Finish(node.children[k]));
          path_.pop_back();
        }
        return Value(std::make_shared<const Sequence>(
            Sequence{node.seq->kind, std::move(items), node.seq->tag}));
      }
      case NodeKind::kMapping: {
        std::vector<std::pair<std::string, Value>> items;
        items.reserve(node.children.size());
        for (size_t k = 0; k < node.children.size(); ++k) {
          const std::string& key = node.map->items[k].first;
          path_.push_back({&key, 0});
          items.emplace_back(key, Finish(node.children[k]));
          path_.pop_back();
        }
        // JAX's dicts flatten and rebuild in sorted key order (byte order of UTF-8 is code
        // point order, as Python sorts str).
        if (jax_) std::ranges::sort(items, {}, &std::pair<std::string, Value>::first);
        return Value(std::make_shared<const Mapping>(Mapping{std::move(items), node.map->tag}));
      }
    }
    throw std::logic_error("Batch: unexpected node kind");
  }

 private:
  // Returns `in`, or its Unpack() (stored in `holder`) if it is Opaque.
  static const Value& Resolve(const Value& in, Value& holder) {
    const auto* op = std::get_if<std::shared_ptr<const Opaque>>(&in.variant());
    if (op == nullptr) return in;
    holder = (*op)->Unpack();
    return holder;
  }

  void BuildArray(Node& node, const NumericLeaf& leaf) {
    node.kind = NodeKind::kArray;
    node.is_array0 = leaf.is_array;
    node.dtype0 = leaf.dtype;
    node.dtypes_seen = Bit(leaf.dtype);
    node.shape.assign(leaf.shape.begin(), leaf.shape.end());
    std::vector<int64_t> out_shape;
    out_shape.reserve(node.shape.size() + 1);
    out_shape.push_back(static_cast<int64_t>(n_));
    out_shape.insert(out_shape.end(), node.shape.begin(), node.shape.end());
    node.out = Array::AllocateUninitialized(leaf.dtype, std::move(out_shape));
    node.leaf_elements = static_cast<size_t>(node.out.num_elements()) / n_;
    node.leaf_bytes = node.leaf_elements * ItemSize(leaf.dtype);
    if (node.leaf_bytes != 0) std::memcpy(node.out.mutable_data(), leaf.data, node.leaf_bytes);
  }

  // The slow path of Fill() for a numeric leaf whose dtype or shape differs from the output's:
  // throws on a shape mismatch, else promotes the output and converts the leaf into slot i.
  void FillConverted(Node& node, const NumericLeaf& leaf, const Value& v, size_t i) {
    if (!std::ranges::equal(leaf.shape, node.shape)) {
      if (!node.is_array0 || !leaf.is_array) KindMismatch(node, v, i);
      Array proto;
      proto.dtype = node.dtype0;
      proto.shape = node.shape;
      Fail(i, proto.Describe() + " vs " + v.AsArray().Describe());
    }
    if ((node.dtypes_seen & Bit(leaf.dtype)) == 0) {
      node.dtypes_seen |= Bit(leaf.dtype);
      const DType promoted = ResultTypeOf(node.dtypes_seen);
      if (promoted != node.out.dtype) Retype(node, promoted, i);
    }
    CastElements(leaf.dtype, leaf.data, node.out.dtype,
                 node.out.mutable_data() + i * node.leaf_bytes, node.leaf_elements);
  }

  // Switches the output of `node` to `dtype`, converting slots [0, i). Every value there came
  // from a dtype that `dtype` holds exactly, or was rounded to float64 (and then `dtype` is
  // float64), so this gives what converting each leaf straight to `dtype` would.
  static void Retype(Node& node, DType dtype, size_t i) {
    Array out = Array::AllocateUninitialized(dtype, node.out.shape);
    CastElements(node.out.dtype, node.out.data, dtype, out.mutable_data(),
                 i * node.leaf_elements);
    node.out = std::move(out);
    node.leaf_bytes = node.leaf_elements * ItemSize(dtype);
  }

  Value StackOpaque(const Node& node) {
    std::vector<const Opaque*> leaves;
    leaves.reserve(node.opaques.size());
    for (const auto& o : node.opaques) leaves.push_back(o.get());
    try {
      return leaves[0]->StackLeaves(leaves);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("Batch: cannot stack the leaves at " + PathString() + ": " +
                                  e.what());
    }
  }

  std::string PathString() const {
    if (path_.empty()) return "the root";
    std::string s;
    for (const PathElem& e : path_) {
      s += '[';
      s += e.key != nullptr ? QuoteKey(*e.key) : std::to_string(e.index);
      s += ']';
    }
    return s;
  }

  // A None leaf: np.stack makes an object array there (see ObjectStackFallback()).
  [[noreturn]] void NeedsObjects() const {
    throw NeedsObjectArray("Batch: the leaves at " + PathString() +
                           " include None, which stacks to a numpy object array; the engine has "
                           "no object arrays without the Python face");
  }

  std::string Differs(size_t i, const std::string& detail) const {
    return "Batch: element " + std::to_string(i) + " differs from element 0 at " + PathString() +
           ": " + detail;
  }

  [[noreturn]] void Fail(size_t i, const std::string& detail) const {
    throw std::invalid_argument(Differs(i, detail));
  }

  // "int", or "opaque <description>" for an Opaque leaf.
  static std::string LeafKind(std::string_view kind_name, const Opaque* opaque) {
    if (opaque == nullptr) return std::string(kind_name);
    return "opaque " + opaque->Describe();
  }

  [[noreturn]] void KindMismatch(const Node& node, const Value& v, size_t i) const {
    const auto* op = std::get_if<std::shared_ptr<const Opaque>>(&v.variant());
    const std::string message = Differs(
        i, "kind " +
               LeafKind(node.kind_name,
                        node.kind == NodeKind::kOpaque ? node.opaques[0].get() : nullptr) +
               " vs " + LeafKind(v.KindName(), op != nullptr ? op->get() : nullptr));
    // A leaf the engine cannot represent (e.g. an int beyond 64 bits, a non-native byte order)
    // beside a native leaf: np.stack decides (float64 for 2**63 and 1, object for 2**70 and 1).
    const bool leaf = !v.is<std::shared_ptr<const Sequence>>() &&
                      !v.is<std::shared_ptr<const Mapping>>();
    if (leaf && (op != nullptr || node.kind == NodeKind::kOpaque) &&
        node.kind != NodeKind::kSequence && node.kind != NodeKind::kMapping) {
      throw NeedsObjectArray(message);
    }
    throw std::invalid_argument(message);
  }

  static std::string KeyList(const Mapping& m) {
    std::string s = "[";
    for (size_t k = 0; k < m.items.size(); ++k) {
      if (k) s += ',';
      s += QuoteKey(m.items[k].first);
    }
    return s + "]";
  }

  [[noreturn]] void KeysMismatch(const Node& node, const Mapping& m, size_t i) const {
    Fail(i, "dict keys " + KeyList(*node.map) + " vs " + KeyList(m));
  }

  size_t n_;
  bool jax_;  // TreeSemantics::kJax
  std::vector<PathElem> path_;
};

}  // namespace

Value Stack(const std::vector<Value>& elements) {
  if (elements.empty()) throw std::invalid_argument("Batch: cannot batch zero elements");
  try {
    Stacker stacker(elements.size(), CurrentTreeSemantics() == TreeSemantics::kJax);
    Node root;
    stacker.Build(root, elements[0]);
    for (size_t i = 1; i < elements.size(); ++i) stacker.Fill(root, elements[i], i);
    return stacker.Finish(root);
  } catch (const NeedsObjectArray&) {
    const ObjectStackFn fallback = ObjectStackFallback();
    if (fallback == nullptr) throw;
    return fallback(elements);
  }
}

void SetObjectStackFallback(ObjectStackFn fn) { object_stack_fallback.store(fn); }

ObjectStackFn ObjectStackFallback() { return object_stack_fallback.load(); }

void SetTreeSemanticsResolver(TreeSemanticsFn fn) { tree_semantics_resolver.store(fn); }

TreeSemantics CurrentTreeSemantics() {
  const int known = tree_semantics.load(std::memory_order_acquire);
  if (known >= 0) return static_cast<TreeSemantics>(known);
  const TreeSemanticsFn resolve = tree_semantics_resolver.load();
  if (resolve == nullptr) return TreeSemantics::kPlain;
  const TreeSemantics resolved = resolve();
  tree_semantics.store(static_cast<int>(resolved), std::memory_order_release);
  return resolved;
}

}  // namespace spelt
