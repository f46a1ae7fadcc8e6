// Implementation of Stack() and StackedStringsTag() from spelt/batch.h.
//
// Algorithm (one walk per element, no per-leaf string building on the happy path):
//  1. Element 0 is walked once to build a plan tree mirroring its structure. Each array or
//     scalar leaf gets its output array allocated right away (Array::Allocate, shape
//     [n, S...]) and element 0's leaf is copied into slot 0.
//  2. Elements 1..n-1 are walked in order against the plan: each node is checked against the
//     plan (kind, length, dict keys, dtype, shape) and each leaf memcpy'd into its slot. The
//     first mismatch throws, so the error names the lowest-index element that differs (and,
//     within it, the first differing leaf in tree order).
//  3. The plan is turned into the output Value (containers take element 0's kind, tag and
//     key order).
// The leaf path for messages is kept as a stack of (key pointer | index) and only formatted
// when throwing. Opaque values (top level or nested) are Unpack()ed exactly once each.
#include "spelt/batch.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace spelt {

const ContainerTag& StackedStringsTag() {
  static const int kMarker = 0;
  // Aliases a static object with a no-op deleter: never null, never freed, same for everyone.
  static const ContainerTag tag(&kMarker, [](const void*) {});
  return tag;
}

namespace {

enum class NodeKind : uint8_t { kNone, kBool, kNumber, kString, kArray, kSequence, kMapping };

// One node of the plan: what element 0 looks like at this position, and the output being built.
struct Node {
  NodeKind kind = NodeKind::kNone;
  std::string_view kind_name;  // element 0's KindName() (string literal; safe to keep)
  bool is_text = false;        // kString: str (true) or bytes
  bool is_float = false;       // kNumber: output is float64 (else int64 so far)
  DType dtype = DType::kUint8;       // kArray: element 0's dtype
  std::vector<int64_t> shape;        // kArray: element 0's shape
  size_t leaf_bytes = 0;             // kArray: bytes per element
  Array out;                         // kBool / kNumber / kArray: the stacked output
  std::vector<Value> strings;        // kString: the stacked strings
  std::shared_ptr<const Sequence> seq;  // kSequence: element 0's sequence (kind, tag, length)
  std::shared_ptr<const Mapping> map;   // kMapping: element 0's mapping (keys, tag)
  std::vector<Node> children;
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
  explicit Stacker(size_t n) : n_(n) { path_.reserve(16); }

  // Builds the plan from element 0 and writes its leaves into slot 0.
  void Build(Node& node, const Value& in) {
    Value unpacked;
    const Value& v = Resolve(in, unpacked, 0);
    node.kind_name = v.KindName();
    const auto& var = v.variant();
    switch (var.index()) {
      case 0:  // None
        node.kind = NodeKind::kNone;
        return;
      case 1:  // bool
        node.kind = NodeKind::kBool;
        node.out = Array::AllocateUninitialized(DType::kBool, {static_cast<int64_t>(n_)});
        node.out.mutable_data()[0] = std::byte{std::get<bool>(var) ? uint8_t{1} : uint8_t{0}};
        return;
      case 2:  // int64
        node.kind = NodeKind::kNumber;
        node.out = Array::AllocateUninitialized(DType::kInt64, {static_cast<int64_t>(n_)});
        std::memcpy(node.out.mutable_data(), &std::get<int64_t>(var), sizeof(int64_t));
        return;
      case 3:  // double
        node.kind = NodeKind::kNumber;
        node.is_float = true;
        node.out = Array::AllocateUninitialized(DType::kFloat64, {static_cast<int64_t>(n_)});
        std::memcpy(node.out.mutable_data(), &std::get<double>(var), sizeof(double));
        return;
      case 4: {  // String
        const String& s = std::get<String>(var);
        node.kind = NodeKind::kString;
        node.is_text = s.is_text;
        node.strings.reserve(n_);
        node.strings.emplace_back(s);
        return;
      }
      case 5: {  // Array
        const Array& a = std::get<Array>(var);
        node.kind = NodeKind::kArray;
        node.dtype = a.dtype;
        node.shape = a.shape;
        node.leaf_bytes = a.nbytes();
        std::vector<int64_t> out_shape;
        out_shape.reserve(a.shape.size() + 1);
        out_shape.push_back(static_cast<int64_t>(n_));
        out_shape.insert(out_shape.end(), a.shape.begin(), a.shape.end());
        node.out = Array::AllocateUninitialized(a.dtype, std::move(out_shape));
        if (node.leaf_bytes != 0) std::memcpy(node.out.mutable_data(), a.data, node.leaf_bytes);
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
      default:  // Opaque: Resolve() never returns one
        break;
    }
    throw std::logic_error("Batch: unexpected value kind");
  }

  // Checks element `i` (i >= 1) against the plan and writes its leaves into slot i.
  void Fill(Node& node, const Value& in, size_t i) {
    Value unpacked;
    const Value& v = Resolve(in, unpacked, i);
    const auto& var = v.variant();
    switch (node.kind) {
      case NodeKind::kNone:
        if (!v.is_none()) KindMismatch(node, v, i);
        return;
      case NodeKind::kBool: {
        const bool* b = std::get_if<bool>(&var);
        if (b == nullptr) KindMismatch(node, v, i);
        node.out.mutable_data()[i] = std::byte{*b ? uint8_t{1} : uint8_t{0}};
        return;
      }
      case NodeKind::kNumber: {
        std::byte* slot = node.out.mutable_data() + i * sizeof(int64_t);
        if (const int64_t* x = std::get_if<int64_t>(&var)) {
          if (node.is_float) {
            double d = static_cast<double>(*x);
            std::memcpy(slot, &d, sizeof d);
          } else {
            std::memcpy(slot, x, sizeof *x);
          }
        } else if (const double* d = std::get_if<double>(&var)) {
          if (!node.is_float) UpcastToFloat(node, i);
          std::memcpy(slot, d, sizeof *d);
        } else {
          KindMismatch(node, v, i);
        }
        return;
      }
      case NodeKind::kString: {
        const String* s = std::get_if<String>(&var);
        if (s == nullptr || s->is_text != node.is_text) KindMismatch(node, v, i);
        node.strings.emplace_back(*s);
        return;
      }
      case NodeKind::kArray: {
        const Array* a = std::get_if<Array>(&var);
        if (a == nullptr) KindMismatch(node, v, i);
        if (a->dtype != node.dtype || a->shape != node.shape) {
          Array proto;
          proto.dtype = node.dtype;
          proto.shape = node.shape;
          Fail(i, proto.Describe() + " vs " + a->Describe());
        }
        if (node.leaf_bytes != 0) {
          std::memcpy(node.out.mutable_data() + i * node.leaf_bytes, a->data, node.leaf_bytes);
        }
        return;
      }
      case NodeKind::kSequence: {
        const auto* sp = std::get_if<std::shared_ptr<const Sequence>>(&var);
        if (sp == nullptr || (*sp)->kind != node.seq->kind) KindMismatch(node, v, i);
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
  static Value Finish(Node& node) {
    switch (node.kind) {
      case NodeKind::kNone:
        return Value();
      case NodeKind::kBool:
      case NodeKind::kNumber:
      case NodeKind::kArray:
        return Value(std::move(node.out));
      case NodeKind::kString:
        return Value(std::make_shared<const Sequence>(
            Sequence{Sequence::Kind::kList, std::move(node.strings), StackedStringsTag()}));
      case NodeKind::kSequence: {
        std::vector<Value> items;
        items.reserve(node.children.size());
        for (Node& c : node.children) items.push_back(Finish(c));
        return Value(std::make_shared<const Sequence>(
            Sequence{node.seq->kind, std::move(items), node.seq->tag}));
      }
      case NodeKind::kMapping: {
        std::vector<std::pair<std::string, Value>> items;
        items.reserve(node.children.size());
        for (size_t k = 0; k < node.children.size(); ++k) {
          items.emplace_back(node.map->items[k].first, Finish(node.children[k]));
        }
        return Value(std::make_shared<const Mapping>(Mapping{std::move(items), node.map->tag}));
      }
    }
    throw std::logic_error("Batch: unexpected node kind");
  }

 private:
  // Returns `in`, or its Unpack() (stored in `holder`) if it is Opaque.
  const Value& Resolve(const Value& in, Value& holder, size_t i) {
    const auto* op = std::get_if<std::shared_ptr<const Opaque>>(&in.variant());
    if (op == nullptr) return in;
    holder = (*op)->Unpack();
    if (holder.is<std::shared_ptr<const Opaque>>()) {
      throw std::invalid_argument("Batch: element " + std::to_string(i) + " at " + PathString() +
                                  ": " + (*op)->Describe() + " unpacked to an opaque value (" +
                                  holder.Describe() + ")");
    }
    return holder;
  }

  // Element 0 was an int at this leaf and element i is the first float: switch the output to
  // float64 and convert slots [0, i) in place (both are 8 bytes per element).
  static void UpcastToFloat(Node& node, size_t i) {
    std::byte* p = node.out.mutable_data();
    for (size_t j = 0; j < i; ++j) {
      int64_t x;
      std::memcpy(&x, p + j * 8, 8);
      double d = static_cast<double>(x);
      std::memcpy(p + j * 8, &d, 8);
    }
    node.out.dtype = DType::kFloat64;
    node.is_float = true;
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

  [[noreturn]] void Fail(size_t i, const std::string& detail) const {
    throw std::invalid_argument("Batch: element " + std::to_string(i) +
                                " differs from element 0 at " + PathString() + ": " + detail);
  }

  [[noreturn]] void KindMismatch(const Node& node, const Value& v, size_t i) const {
    Fail(i, "kind " + std::string(node.kind_name) + " vs " + std::string(v.KindName()));
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
  std::vector<PathElem> path_;
};

}  // namespace

Value Stack(const std::vector<Value>& elements) {
  if (elements.empty()) throw std::invalid_argument("Batch: cannot batch zero elements");
  Stacker stacker(elements.size());
  Node root;
  stacker.Build(root, elements[0]);
  for (size_t i = 1; i < elements.size(); ++i) stacker.Fill(root, elements[i], i);
  return Stacker::Finish(root);
}

}  // namespace spelt
