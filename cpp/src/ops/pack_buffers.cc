// The leaf-level pieces of sequence packing (see pack_buffers.h).
#include "ops/pack_buffers.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "spelt/stack.h"

namespace spelt::internal {
namespace {

// A 0-d array holding one scalar.
template <typename T>
Array Scalar(DType dtype, T v) {
  Array a = Array::AllocateUninitialized(dtype, {});
  std::memcpy(a.mutable_data(), &v, sizeof(T));
  return a;
}

Array ScalarArray(const Value& v) {
  if (v.is<bool>()) return Scalar(DType::kBool, static_cast<uint8_t>(v.as<bool>()));
  if (v.is<int64_t>()) return Scalar(DType::kInt64, v.as<int64_t>());
  if (v.is<double>()) return Scalar(DType::kFloat64, v.as<double>());
  if (v.is<Array>() && v.as<Array>().shape.empty()) return v.as<Array>();
  throw std::invalid_argument("not a number: " + v.Describe());
}

bool IsInteger(DType d) {
  return d != DType::kBool && d != DType::kFloat16 && d != DType::kFloat32 &&
         d != DType::kFloat64;
}

// A list / tuple of numbers as a 1-d int64 (all ints or bools) or float64 array.
Array ListArray(const Sequence& seq, const std::string& what) {
  bool all_int = true;
  for (const Value& v : seq.items) {
    if (v.is<double>()) {
      all_int = false;
    } else if (!v.is<int64_t>() && !v.is<bool>()) {
      throw std::invalid_argument(what + ": a list feature must hold numbers, got " +
                                  v.Describe());
    }
  }
  const auto n = static_cast<int64_t>(seq.items.size());
  Array out = Array::AllocateUninitialized(all_int ? DType::kInt64 : DType::kFloat64, {n});
  for (size_t i = 0; i < seq.items.size(); ++i) {
    const Value& v = seq.items[i];
    if (all_int) {
      const int64_t x = v.is<bool>() ? int64_t{v.as<bool>()} : v.as<int64_t>();
      std::memcpy(out.mutable_data() + i * 8, &x, 8);
    } else {
      const double x = v.is<double>() ? v.as<double>()
                       : v.is<bool>() ? static_cast<double>(v.as<bool>())
                                      : static_cast<double>(v.as<int64_t>());
      std::memcpy(out.mutable_data() + i * 8, &x, 8);
    }
  }
  return out;
}

std::string ShapeName(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

size_t Tokens::token_bytes() const {
  size_t n = ItemSize(leaf.dtype);
  for (int64_t d : trailing) n *= static_cast<size_t>(d);
  return n;
}

Tokens ToTokens(const Value& leaf, const std::string& what) {
  const Value v = leaf.Unpacked();
  Tokens t;
  if (v.is<Array>()) {
    t.leaf = v.as<Array>();
  } else if (v.is<std::shared_ptr<const Sequence>>()) {
    t.leaf = ListArray(v.AsSequence(), what);
  } else if (v.is<bool>() || v.is<int64_t>() || v.is<double>()) {
    t.leaf = ScalarArray(v);
  } else {
    throw std::invalid_argument(what + ": expected an array or a number, got " + v.Describe());
  }
  if (t.leaf.shape.empty()) {
    t.length = 1;
  } else {
    t.length = t.leaf.shape[0];
    t.trailing.assign(t.leaf.shape.begin() + 1, t.leaf.shape.end());
  }
  return t;
}

Array FilledArray(DType dtype, std::vector<int64_t> shape, const Value& fill) {
  if (fill.is_none()) return Array::Allocate(dtype, std::move(shape));
  Array one = ScalarArray(fill.Unpacked());
  if (IsInteger(dtype) && (one.dtype == DType::kFloat64 || one.dtype == DType::kFloat32)) {
    double d = 0;
    CastElements(one.dtype, one.data, DType::kFloat64, &d, 1);
    one = Scalar(DType::kInt64, static_cast<int64_t>(d));
  }
  Array out = Array::AllocateUninitialized(dtype, std::move(shape));
  const size_t item = ItemSize(dtype);
  std::byte cell[8];
  CastElements(one.dtype, one.data, dtype, cell, 1);
  const auto n = static_cast<size_t>(out.num_elements());
  std::byte* p = out.mutable_data();
  for (size_t i = 0; i < n; ++i) std::memcpy(p + i * item, cell, item);
  return out;
}

void CopyTokens(const Array& dst, int64_t at, const Tokens& src, int64_t from, int64_t count,
                const std::string& what) {
  if (count <= 0) return;
  if (!std::equal(dst.shape.begin() + 2, dst.shape.end(), src.trailing.begin(),
                  src.trailing.end())) {
    std::vector<int64_t> want(dst.shape.begin() + 2, dst.shape.end());
    throw std::invalid_argument(what + ": tokens of shape " + ShapeName(src.trailing) +
                                " do not match the packed buffer's token shape " +
                                ShapeName(want) + " (set by the first element of the batch)");
  }
  const size_t per_token = src.token_bytes() / ItemSize(src.leaf.dtype);
  const std::byte* s = src.leaf.data + static_cast<size_t>(from) * src.token_bytes();
  const size_t dst_token = per_token * ItemSize(dst.dtype);
  std::byte* d = dst.mutable_data() + static_cast<size_t>(at) * dst_token;
  const size_t n = static_cast<size_t>(count) * per_token;
  if (src.leaf.dtype == dst.dtype) {
    std::memcpy(d, s, n * ItemSize(dst.dtype));
    return;
  }
  try {
    CastElements(src.leaf.dtype, s, dst.dtype, d, n);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(what + ": " + e.what());
  }
}

void SetToken(const Array& dst, int64_t at, int64_t value) {
  size_t per_token = 1;
  for (size_t i = 2; i < dst.shape.size(); ++i) per_token *= static_cast<size_t>(dst.shape[i]);
  const size_t item = ItemSize(dst.dtype);
  std::byte cell[8];
  CastElements(DType::kInt64, &value, dst.dtype, cell, 1);
  std::byte* d = dst.mutable_data() + static_cast<size_t>(at) * per_token * item;
  for (size_t i = 0; i < per_token; ++i) std::memcpy(d + i * item, cell, item);
}

Array RowView(const Array& batch, int64_t row) {
  Array out;
  out.dtype = batch.dtype;
  out.shape.assign(batch.shape.begin() + 1, batch.shape.end());
  out.owner = batch.owner;
  out.data = batch.data + static_cast<size_t>(row) * out.nbytes();
  return out;
}

std::string PathName(const LeafPath& path) {
  std::string s;
  for (const PathKey& k : path) {
    if (!s.empty()) s += "/";
    s += std::holds_alternative<std::string>(k) ? std::get<std::string>(k)
                                                 : std::to_string(std::get<size_t>(k));
  }
  return s;
}

namespace {

void Flatten(const Value& tree, LeafPath& path, std::vector<std::pair<LeafPath, Value>>& out) {
  if (tree.is<std::shared_ptr<const Mapping>>()) {
    for (const auto& [key, child] : tree.AsMapping().items) {
      path.emplace_back(key);
      Flatten(child, path, out);
      path.pop_back();
    }
  } else if (tree.is<std::shared_ptr<const Sequence>>()) {
    const Sequence& seq = tree.AsSequence();
    for (size_t i = 0; i < seq.items.size(); ++i) {
      path.emplace_back(i);
      Flatten(seq.items[i], path, out);
      path.pop_back();
    }
  } else {
    out.emplace_back(path, tree);
  }
}

Value Rebuild(const Value& tree, const std::vector<Value>& leaves, bool sort_keys, size_t& next) {
  if (tree.is<std::shared_ptr<const Mapping>>()) {
    auto m = std::make_shared<Mapping>();
    m->tag = tree.AsMapping().tag;
    for (const auto& [key, child] : tree.AsMapping().items) {
      m->items.emplace_back(key, Rebuild(child, leaves, sort_keys, next));
    }
    if (sort_keys) std::ranges::sort(m->items, {}, &std::pair<std::string, Value>::first);
    return Value(std::shared_ptr<const Mapping>(std::move(m)));
  }
  if (tree.is<std::shared_ptr<const Sequence>>()) {
    const Sequence& seq = tree.AsSequence();
    auto s = std::make_shared<Sequence>();
    s->kind = seq.kind;
    s->tag = seq.tag;
    for (const Value& child : seq.items) {
      s->items.push_back(Rebuild(child, leaves, sort_keys, next));
    }
    return Value(std::shared_ptr<const Sequence>(std::move(s)));
  }
  return leaves.at(next++);
}

}  // namespace

std::vector<std::pair<LeafPath, Value>> FlattenTree(const Value& tree) {
  std::vector<std::pair<LeafPath, Value>> out;
  LeafPath path;
  Flatten(tree, path, out);
  return out;
}

const Value* FindPath(const Value& element, const LeafPath& path) {
  const Value* v = &element;
  for (const PathKey& k : path) {
    if (const auto* key = std::get_if<std::string>(&k)) {
      if (!v->is<std::shared_ptr<const Mapping>>()) return nullptr;
      v = v->AsMapping().Find(*key);
    } else {
      if (!v->is<std::shared_ptr<const Sequence>>()) return nullptr;
      const Sequence& seq = v->AsSequence();
      const size_t i = std::get<size_t>(k);
      v = i < seq.items.size() ? &seq.items[i] : nullptr;
    }
    if (v == nullptr) return nullptr;
  }
  return v;
}

Value RebuildTree(const Value& tree, const std::vector<Value>& leaves, bool sort_keys) {
  size_t next = 0;
  return Rebuild(tree, leaves, sort_keys, next);
}

}  // namespace spelt::internal
