// Implementation of spelt/value.h.
#include "spelt/value.h"

#include "base/buffer_pool.h"

#include <cstring>
#include <stdexcept>

namespace spelt {

size_t ItemSize(DType dtype) {
  switch (dtype) {
    case DType::kBool: case DType::kInt8: case DType::kUint8: return 1;
    case DType::kInt16: case DType::kUint16: case DType::kFloat16: return 2;
    case DType::kInt32: case DType::kUint32: case DType::kFloat32: return 4;
    case DType::kInt64: case DType::kUint64: case DType::kFloat64: return 8;
  }
  throw std::invalid_argument("unknown dtype");
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "bool";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUint8: return "uint8";
    case DType::kUint16: return "uint16";
    case DType::kUint32: return "uint32";
    case DType::kUint64: return "uint64";
    case DType::kFloat16: return "float16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
  }
  return "unknown";
}

int64_t Array::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Array::Describe() const {
  std::string s(DTypeName(dtype));
  s += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + ']';
}

Array Array::Allocate(DType dtype, std::vector<int64_t> shape) {
  Array a = AllocateUninitialized(dtype, std::move(shape));
  std::memset(a.mutable_data(), 0, a.nbytes());
  return a;
}

Array Array::AllocateUninitialized(DType dtype, std::vector<int64_t> shape) {
  Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  for (int64_t d : a.shape) {
    if (d < 0) throw std::invalid_argument("Array::Allocate: negative dimension in " + a.Describe());
  }
  // The buffer comes from the pool (base/buffer_pool.h): from 64 KiB on, a stream of batches
  // reuses memory already faulted in instead of having the kernel map and zero fresh pages for
  // each; from 2 MiB on, it is aligned to huge pages and asked to use them (as numpy does).
  auto buffer = std::make_shared<internal::Buffer>(a.nbytes());
  char* const data = buffer->data();
  a.data = reinterpret_cast<const std::byte*>(data);
  a.owner = std::shared_ptr<void>(std::move(buffer), data);
  return a;
}

Value Value::List(std::vector<Value> items) {
  return Value(std::make_shared<const Sequence>(Sequence{Sequence::Kind::kList, std::move(items), {}}));
}

Value Value::Tuple(std::vector<Value> items) {
  return Value(std::make_shared<const Sequence>(Sequence{Sequence::Kind::kTuple, std::move(items), {}}));
}

Value Value::Dict(std::vector<std::pair<std::string, Value>> items) {
  return Value(std::make_shared<const Mapping>(Mapping{std::move(items), {}}));
}

namespace {
[[noreturn]] void WrongKind(const Value& v, std::string_view wanted) {
  throw std::invalid_argument("expected " + std::string(wanted) + ", got " + std::string(v.KindName()));
}
}  // namespace

int64_t Value::AsInt() const {
  if (auto* p = std::get_if<int64_t>(&v_)) return *p;
  if (auto* p = std::get_if<bool>(&v_)) return *p;
  WrongKind(*this, "int");
}

double Value::AsDouble() const {
  if (auto* p = std::get_if<double>(&v_)) return *p;
  if (auto* p = std::get_if<int64_t>(&v_)) return static_cast<double>(*p);
  WrongKind(*this, "float");
}

const Array& Value::AsArray() const {
  if (auto* p = std::get_if<Array>(&v_)) return *p;
  WrongKind(*this, "array");
}

const Sequence& Value::AsSequence() const {
  if (auto* p = std::get_if<std::shared_ptr<const Sequence>>(&v_)) return **p;
  WrongKind(*this, "list or tuple");
}

const Mapping& Value::AsMapping() const {
  if (auto* p = std::get_if<std::shared_ptr<const Mapping>>(&v_)) return **p;
  WrongKind(*this, "dict");
}

const Value* Mapping::Find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

const Value& Value::operator[](std::string_view key) const {
  const Value* v = AsMapping().Find(key);
  if (v == nullptr) throw std::out_of_range("no key '" + std::string(key) + "' in " + Describe());
  return *v;
}

const Value& Value::operator[](size_t i) const {
  const Sequence& s = AsSequence();
  if (i >= s.items.size()) {
    throw std::out_of_range("index " + std::to_string(i) + " out of range for " + Describe());
  }
  return s.items[i];
}

Value Value::Unpacked() const {
  if (auto* p = std::get_if<std::shared_ptr<const Opaque>>(&v_)) return (*p)->Unpack();
  return *this;
}

std::string_view Value::KindName() const {
  struct Visitor {
    std::string_view operator()(None) const { return "none"; }
    std::string_view operator()(bool) const { return "bool"; }
    std::string_view operator()(int64_t) const { return "int"; }
    std::string_view operator()(double) const { return "float"; }
    std::string_view operator()(const String& s) const { return s.is_text ? "str" : "bytes"; }
    std::string_view operator()(const Array&) const { return "array"; }
    std::string_view operator()(const std::shared_ptr<const Sequence>& s) const {
      return s->kind == Sequence::Kind::kTuple ? "tuple" : "list";
    }
    std::string_view operator()(const std::shared_ptr<const Mapping>&) const { return "dict"; }
    std::string_view operator()(const std::shared_ptr<const Opaque>&) const { return "opaque"; }
  };
  return std::visit(Visitor{}, v_);
}

std::string Value::Describe() const {
  struct Visitor {
    std::string operator()(None) const { return "None"; }
    std::string operator()(bool) const { return "bool"; }
    std::string operator()(int64_t) const { return "int"; }
    std::string operator()(double) const { return "float"; }
    std::string operator()(const String& s) const { return s.is_text ? "str" : "bytes"; }
    std::string operator()(const Array& a) const { return a.Describe(); }
    std::string operator()(const std::shared_ptr<const Sequence>& s) const {
      bool tuple = s->kind == Sequence::Kind::kTuple;
      std::string out = tuple ? "(" : "[";
      for (size_t i = 0; i < s->items.size(); ++i) {
        if (i) out += ", ";
        out += s->items[i].Describe();
      }
      return out + (tuple ? ")" : "]");
    }
    std::string operator()(const std::shared_ptr<const Mapping>& m) const {
      std::string out = "{";
      for (size_t i = 0; i < m->items.size(); ++i) {
        if (i) out += ", ";
        out += "'" + m->items[i].first + "': " + m->items[i].second.Describe();
      }
      return out + "}";
    }
    std::string operator()(const std::shared_ptr<const Opaque>& o) const { return o->Describe(); }
  };
  return std::visit(Visitor{}, v_);
}

bool operator==(const Value& a, const Value& b) {
  if (a.v_.index() != b.v_.index()) return false;
  struct Visitor {
    const Value::Variant& other;
    bool operator()(Value::None) const { return true; }
    bool operator()(bool v) const { return v == std::get<bool>(other); }
    bool operator()(int64_t v) const { return v == std::get<int64_t>(other); }
    bool operator()(double v) const { return v == std::get<double>(other); }
    bool operator()(const String& s) const {
      const auto& o = std::get<String>(other);
      return s.is_text == o.is_text && s.data == o.data;
    }
    bool operator()(const Array& x) const {
      const auto& y = std::get<Array>(other);
      return x.dtype == y.dtype && x.shape == y.shape &&
             (x.nbytes() == 0 || std::memcmp(x.data, y.data, x.nbytes()) == 0);
    }
    bool operator()(const std::shared_ptr<const Sequence>& s) const {
      const auto& o = std::get<std::shared_ptr<const Sequence>>(other);
      return s->kind == o->kind && s->items == o->items;
    }
    bool operator()(const std::shared_ptr<const Mapping>& m) const {
      const auto& o = std::get<std::shared_ptr<const Mapping>>(other);
      return m->items == o->items;
    }
    bool operator()(const std::shared_ptr<const Opaque>& p) const {
      return p == std::get<std::shared_ptr<const Opaque>>(other);
    }
  };
  return std::visit(Visitor{b.v_}, a.v_);
}

}  // namespace spelt
