// Implementation of py_element_codec.h.
//
// Encoding: one tag byte per node, then its payload (integers in host byte order, as both sides are
// processes of one machine):
//   'N' None   'T' True   'F' False   'i' int64   'd' float64
//   's' str (u64 length, UTF-8 bytes)   'b' bytes (u64 length, bytes)
//   'l' list / 't' tuple (u64 count, items)   'm' dict (u64 count, then per item: u64 key
//   length, UTF-8 key, value)   'a' array (u8 dtype, u8 ndim, i64 shape[ndim]; the bytes are
//   the next entry of the element's arrays)   'g' numpy scalar (u8 dtype, its bytes).
#include "py_element_codec.h"

#include <cstring>
#include <stdexcept>
#include <utility>
#include <variant>

#include "gil.h"

namespace spelt::python {
namespace {

constexpr int kMaxDepth = 64;

constexpr int kNumDTypes = static_cast<int>(DType::kFloat64) + 1;

// numpy's types, looked up once and kept for the process.
struct Numpy {
  PyTypeObject* ndarray = nullptr;
  PyTypeObject* generic = nullptr;              // base of numpy scalars
  PyObject* scalar_types[kNumDTypes] = {};      // numpy.dtype(name).type per Spelt dtype
  PyObject* dtypes[kNumDTypes] = {};            // numpy.dtype(name)
  PyObject* frombuffer = nullptr;
};
const Numpy& GetNumpy() {
  static const Numpy* numpy = [] {
    auto* n = new Numpy();
    nb::module_ np = nb::module_::import_("numpy");
    n->ndarray = reinterpret_cast<PyTypeObject*>(nb::object(np.attr("ndarray")).release().ptr());
    n->generic = reinterpret_cast<PyTypeObject*>(nb::object(np.attr("generic")).release().ptr());
    n->frombuffer = nb::object(np.attr("frombuffer")).release().ptr();
    for (int d = 0; d < kNumDTypes; ++d) {
      const std::string_view name = DTypeName(static_cast<DType>(d));
      nb::object dtype = np.attr("dtype")(nb::str(name.data(), name.size()));
      n->scalar_types[d] = nb::object(dtype.attr("type")).release().ptr();
      n->dtypes[d] = dtype.release().ptr();
    }
    return n;
  }();
  return *numpy;
}

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

void PutString(std::string* out, const char* data, size_t size) {
  Put<uint64_t>(out, size);
  out->append(data, size);
}

// The numpy array `obj` (exact ndarray) as an Array sharing its memory, if it is C-contiguous
// and of a Spelt dtype.
std::optional<Array> SpeltDtypeArray(PyObject* obj) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) != 0) {  // Fortran order, strided
    PyErr_Clear();
    return std::nullopt;
  }
  PyBuffer_Release(&view);
  Value v = ToValue(obj);  // an Opaque leaf for dtypes Spelt does not have
  if (!v.is<Array>()) return std::nullopt;
  return v.as<Array>();
}

bool Encode(PyObject* obj, int depth, std::string* out, std::vector<Array>* arrays) {
  if (depth > kMaxDepth) return false;
  if (obj == Py_None) {
    out->push_back('N');
    return true;
  }
  if (obj == Py_True || obj == Py_False) {
    out->push_back(obj == Py_True ? 'T' : 'F');
    return true;
  }
  PyTypeObject* type = Py_TYPE(obj);
  if (type == &PyLong_Type) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) return false;
    out->push_back('i');
    Put<int64_t>(out, v);
    return true;
  }
  if (type == &PyFloat_Type) {
    out->push_back('d');
    Put<double>(out, PyFloat_AS_DOUBLE(obj));
    return true;
  }
  if (type == &PyUnicode_Type) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(obj, &size);
    if (data == nullptr) {  // e.g. lone surrogates
      PyErr_Clear();
      return false;
    }
    out->push_back('s');
    PutString(out, data, static_cast<size_t>(size));
    return true;
  }
  if (type == &PyBytes_Type) {
    out->push_back('b');
    PutString(out, PyBytes_AS_STRING(obj), static_cast<size_t>(PyBytes_GET_SIZE(obj)));
    return true;
  }
  if (type == &PyList_Type || type == &PyTuple_Type) {
    const bool is_list = type == &PyList_Type;
    const Py_ssize_t n = is_list ? PyList_GET_SIZE(obj) : PyTuple_GET_SIZE(obj);
    out->push_back(is_list ? 'l' : 't');
    Put<uint64_t>(out, static_cast<uint64_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = is_list ? PyList_GET_ITEM(obj, i) : PyTuple_GET_ITEM(obj, i);
      if (!Encode(item, depth + 1, out, arrays)) return false;
    }
    return true;
  }
  if (type == &PyDict_Type) {
    out->push_back('m');
    Put<uint64_t>(out, static_cast<uint64_t>(PyDict_GET_SIZE(obj)));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(obj, &pos, &key, &value)) {
      if (Py_TYPE(key) != &PyUnicode_Type) return false;
      Py_ssize_t size = 0;
      const char* data = PyUnicode_AsUTF8AndSize(key, &size);
      if (data == nullptr) {
        PyErr_Clear();
        return false;
      }
      PutString(out, data, static_cast<size_t>(size));
      if (!Encode(value, depth + 1, out, arrays)) return false;
    }
    return true;
  }
  if (PyObject_TypeCheck(obj, GetNumpy().generic)) {  // a numpy scalar of a Spelt dtype
    Value v = ToValue(obj);  // a 0-d Array, or an Opaque leaf
    if (!v.is<Array>()) return false;
    const Array& a = v.as<Array>();
    if (reinterpret_cast<PyObject*>(type) != GetNumpy().scalar_types[static_cast<int>(a.dtype)]) {
      return false;  // e.g. numpy.longlong, which would come back as numpy.int64
    }
    out->push_back('g');
    Put<uint8_t>(out, static_cast<uint8_t>(a.dtype));
    out->append(reinterpret_cast<const char*>(a.data), a.nbytes());
    return true;
  }
  if (type == GetNumpy().ndarray) {
    std::optional<Array> array = SpeltDtypeArray(obj);
    if (!array || array->shape.size() > 255) return false;
    out->push_back('a');
    Put<uint8_t>(out, static_cast<uint8_t>(array->dtype));
    Put<uint8_t>(out, static_cast<uint8_t>(array->shape.size()));
    for (int64_t d : array->shape) Put<int64_t>(out, d);
    arrays->push_back(std::move(*array));
    return true;
  }
  return false;
}

// EncodeValue's recursion: the same tags as Encode() writes for the value's Python object.
bool EncodeTagged(const Value& value, int depth, std::string* out, std::vector<Array>* arrays) {
  if (depth > kMaxDepth) return false;
  struct Visitor {
    int depth;
    std::string* out;
    std::vector<Array>* arrays;
    bool operator()(const Value::None&) const {
      out->push_back('N');
      return true;
    }
    bool operator()(bool v) const {
      out->push_back(v ? 'T' : 'F');
      return true;
    }
    bool operator()(int64_t v) const {
      out->push_back('i');
      Put<int64_t>(out, v);
      return true;
    }
    bool operator()(double v) const {
      out->push_back('d');
      Put<double>(out, v);
      return true;
    }
    bool operator()(const String& v) const {
      out->push_back(v.is_text ? 's' : 'b');
      PutString(out, v.data.data(), v.data.size());
      return true;
    }
    bool operator()(const Array& a) const {
      if (IsNumpyScalar(a) || a.shape.size() > 255) return false;
      out->push_back('a');
      Put<uint8_t>(out, static_cast<uint8_t>(a.dtype));
      Put<uint8_t>(out, static_cast<uint8_t>(a.shape.size()));
      for (int64_t d : a.shape) Put<int64_t>(out, d);
      arrays->push_back(a);
      return true;
    }
    bool operator()(const std::shared_ptr<const Sequence>& s) const {
      if (s->tag) return false;  // a namedtuple, a subclass, a pytree node: a Python type
      out->push_back(s->kind == Sequence::Kind::kList ? 'l' : 't');
      Put<uint64_t>(out, s->items.size());
      for (const Value& item : s->items) {
        if (!EncodeTagged(item, depth + 1, out, arrays)) return false;
      }
      return true;
    }
    bool operator()(const std::shared_ptr<const Mapping>& m) const {
      if (m->tag) return false;  // a dict subclass
      out->push_back('m');
      Put<uint64_t>(out, m->items.size());
      for (const auto& [key, item] : m->items) {
        PutString(out, key.data(), key.size());
        if (!EncodeTagged(item, depth + 1, out, arrays)) return false;
      }
      return true;
    }
    bool operator()(const std::shared_ptr<const Opaque>&) const { return false; }
  };
  return std::visit(Visitor{depth, out, arrays}, value.variant());
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ == data_.size(); }
  template <typename T>
  T Get() {
    T value;
    std::memcpy(&value, Take(sizeof(T)).data(), sizeof(T));
    return value;
  }
  std::string_view Take(uint64_t size) {
    if (size > data_.size() - pos_) throw std::invalid_argument("element encoding: truncated");
    std::string_view out = data_.substr(pos_, size);
    pos_ += size;
    return out;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

class Decoder {
 public:
  Decoder(std::string_view data, std::span<const ArrayBytes> arrays)
      : reader_(data), arrays_(arrays) {}

  Value Decode(int depth) {
    if (depth > kMaxDepth) throw std::invalid_argument("element encoding: nested too deep");
    const char tag = reader_.Get<char>();
    switch (tag) {
      case 'N': return Value();
      case 'T': return Value(true);
      case 'F': return Value(false);
      case 'i': return Value(reader_.Get<int64_t>());
      case 'd': return Value(reader_.Get<double>());
      case 's': return Value::Text(std::string(reader_.Take(reader_.Get<uint64_t>())));
      case 'b': return Value::Bytes(std::string(reader_.Take(reader_.Get<uint64_t>())));
      case 'l':
      case 't': {
        auto seq = std::make_shared<Sequence>();
        seq->kind = tag == 'l' ? Sequence::Kind::kList : Sequence::Kind::kTuple;
        const uint64_t n = reader_.Get<uint64_t>();
        for (uint64_t i = 0; i < n; ++i) seq->items.push_back(Decode(depth + 1));
        return Value(std::shared_ptr<const Sequence>(std::move(seq)));
      }
      case 'm': {
        auto map = std::make_shared<Mapping>();
        const uint64_t n = reader_.Get<uint64_t>();
        for (uint64_t i = 0; i < n; ++i) {
          std::string key(reader_.Take(reader_.Get<uint64_t>()));
          map->items.emplace_back(std::move(key), Decode(depth + 1));
        }
        return Value(std::shared_ptr<const Mapping>(std::move(map)));
      }
      case 'a': return DecodeArray();
      case 'g': return DecodeScalar();
      default:
        throw std::invalid_argument("element encoding: unknown tag " +
                                    std::to_string(static_cast<int>(tag)));
    }
  }

  std::optional<Value> DecodeTop() {
    Value v = Decode(0);
    if (!reader_.done()) throw std::invalid_argument("element encoding: trailing bytes");
    if (next_array_ != arrays_.size()) {
      throw std::invalid_argument("element encoding: arrays left over");
    }
    if (v.is_none()) return std::nullopt;
    return v;
  }

 private:
  DType GetDType() {
    const auto dtype = reader_.Get<uint8_t>();
    if (dtype >= kNumDTypes) throw std::invalid_argument("element encoding: unknown dtype");
    return static_cast<DType>(dtype);
  }

  // A numpy scalar: a Python object (numpy.frombuffer(bytes, dtype)[0]), as in a pipeline
  // without workers.
  Value DecodeScalar() {
    const DType dtype = GetDType();
    std::string_view raw = reader_.Take(ItemSize(dtype));
    GilAcquire gil;
    nb::object scalar = nb::handle(GetNumpy().frombuffer)(
        nb::bytes(raw.data(), raw.size()), nb::handle(GetNumpy().dtypes[static_cast<int>(dtype)]))[0];
    return Wrap(scalar);
  }

  Value DecodeArray() {
    Array a;
    a.dtype = GetDType();
    a.shape.resize(reader_.Get<uint8_t>());
    for (int64_t& d : a.shape) {
      d = reader_.Get<int64_t>();
      if (d < 0) throw std::invalid_argument("element encoding: negative dimension");
    }
    if (next_array_ >= arrays_.size()) {
      throw std::invalid_argument("element encoding: more arrays than buffers");
    }
    const ArrayBytes& bytes = arrays_[next_array_++];
    if (static_cast<int64_t>(a.nbytes()) != bytes.size) {
      throw std::invalid_argument("element encoding: " + a.Describe() + " does not fit " +
                                  std::to_string(bytes.size) + " bytes");
    }
    a.data = bytes.data;
    a.owner = bytes.owner;
    return Value(std::move(a));
  }

  Reader reader_;
  std::span<const ArrayBytes> arrays_;
  size_t next_array_ = 0;
};

}  // namespace

bool EncodeValue(const Value& value, std::string* out, std::vector<Array>* arrays) {
  const size_t size = out->size(), count = arrays->size();
  if (EncodeTagged(value, 0, out, arrays)) return true;
  out->resize(size);
  arrays->resize(count);
  return false;
}

bool EncodeElement(nb::handle obj, std::string* out, std::vector<Array>* arrays) {
  const size_t out_size = out->size(), arrays_size = arrays->size();
  if (Encode(obj.ptr(), 0, out, arrays)) return true;
  out->resize(out_size);
  arrays->resize(arrays_size);
  return false;
}

std::optional<Value> DecodeElement(std::string_view data, std::span<const ArrayBytes> arrays) {
  return Decoder(data, arrays).DecodeTop();
}

}  // namespace spelt::python
