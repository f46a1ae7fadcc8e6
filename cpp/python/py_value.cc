// Implementation of py_value.h.
#include "py_value.h"

#include <nanobind/stl/string.h>
// The numpy C API, used by this file only (PyArray_API is static here).
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <cstring>
#include <stdexcept>

#include "gil.h"
#include "spelt/bfloat16_array.h"
#include "spelt/stack.h"

namespace spelt::python {
namespace {

struct Cache {
  nb::object ascontiguousarray, array, stack;
  nb::object defaultdict, partial;
  nb::object pytree_node;  // spelt._tree.pytree_node, looked up on first use (JAX only)
};
Cache* cache = nullptr;  // set once by InitPyValue(); intentionally never freed

struct PyDecref {
  void operator()(PyObject* p) const {
    TryGil gil;
    if (gil.held()) Py_DECREF(p);  // else the interpreter is exiting and frees everything
  }
};

// The owner of an Array that views a numpy scalar's buffer (FromNumpy()): it keeps the scalar
// alive, and lets ArrayToPython() give back the scalar itself while the Array is still exactly
// that buffer, as Grain passes numpy scalars through (e.g. the packers' meta features).
struct NumpyScalarOwner {
  PyObject* scalar;
  const std::byte* data;
  DType dtype;
  void operator()(const void* /*scalar*/) const { PyDecref{}(scalar); }
};

// An object that ToValue() cannot convert, as an Opaque leaf (Unpack() returns it unchanged).
Value WrapLeaf(nb::handle obj) {
  return Value(std::shared_ptr<const Opaque>(std::make_shared<PyOpaque>(obj, /*is_leaf=*/true)));
}

// numpy buffer format character -> DType (native byte order only).
std::optional<DType> DTypeFromFormat(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return DType::kUint8;
  if (*format == '<' || *format == '=' || *format == '@') ++format;
  if (format[0] == '\0' || format[1] != '\0') return std::nullopt;
  const char c = format[0];
  switch (c) {
    case '?': return DType::kBool;
    case 'e': return DType::kFloat16;
    case 'f': return DType::kFloat32;
    case 'd': return DType::kFloat64;
    default: break;
  }
  const bool is_signed = c == 'b' || c == 'h' || c == 'i' || c == 'l' || c == 'q' || c == 'n';
  const bool is_unsigned = c == 'B' || c == 'H' || c == 'I' || c == 'L' || c == 'Q' || c == 'N';
  if (!is_signed && !is_unsigned) return std::nullopt;
  switch (itemsize) {
    case 1: return is_signed ? DType::kInt8 : DType::kUint8;
    case 2: return is_signed ? DType::kInt16 : DType::kUint16;
    case 4: return is_signed ? DType::kInt32 : DType::kUint32;
    case 8: return is_signed ? DType::kInt64 : DType::kUint64;
    default: return std::nullopt;
  }
}

// A numpy array (or 0-d from a numpy scalar) as an Array sharing its memory; an Opaque leaf if
// the dtype has no Spelt equivalent (object, strings, complex, big-endian, ...).
Value FromNumpy(nb::handle obj) {
  const bool scalar = PyArray_IsScalar(obj.ptr(), Generic);
  nb::object arr = nb::borrow(obj);
  Py_buffer view;
  if (PyObject_GetBuffer(arr.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    arr = cache->ascontiguousarray(obj);
    if (PyObject_GetBuffer(arr.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
      PyErr_Clear();
      return WrapLeaf(obj);
    }
  }
  std::optional<DType> dtype = DTypeFromFormat(view.format, view.itemsize);
  Array a;
  if (dtype) {
    a.dtype = *dtype;
    a.shape.assign(view.shape, view.shape + view.ndim);
    a.data = static_cast<const std::byte*>(view.buf);
    if (scalar && arr.is(obj)) {
      Py_INCREF(obj.ptr());
      a.owner = std::shared_ptr<const void>(obj.ptr(), NumpyScalarOwner{obj.ptr(), a.data, *dtype});
    } else {
      a.owner = MakePyRef(arr);
    }
  }
  PyBuffer_Release(&view);
  if (!dtype) return WrapLeaf(obj);
  return Value(std::move(a));
}

// numpy's type number for `d`: the canonical one for its size (NPY_INT64 is NPY_LONG on LP64
// Linux), so arrays come out as numpy creates them (int64 has dtype.char 'l' and
// dtype.type np.int64, not np.longlong), as in Grain.
int NumpyTypeNum(DType d) {
  switch (d) {
    case DType::kBool: return NPY_BOOL;
    case DType::kInt8: return NPY_INT8;
    case DType::kInt16: return NPY_INT16;
    case DType::kInt32: return NPY_INT32;
    case DType::kInt64: return NPY_INT64;
    case DType::kUint8: return NPY_UINT8;
    case DType::kUint16: return NPY_UINT16;
    case DType::kUint32: return NPY_UINT32;
    case DType::kUint64: return NPY_UINT64;
    case DType::kFloat16: return NPY_FLOAT16;
    case DType::kFloat32: return NPY_FLOAT32;
    case DType::kFloat64: return NPY_FLOAT64;
  }
  throw std::invalid_argument("unknown dtype");
}

// A writable C-contiguous numpy view of the array; its base is a capsule holding a.owner. An
// Array that is still a numpy scalar's buffer (NumpyScalarOwner) gives that scalar back.
nb::object ArrayToPython(const Array& a) {
  if (IsNumpyScalar(a)) return nb::borrow(std::get_deleter<NumpyScalarOwner>(a.owner)->scalar);
  std::vector<npy_intp> dims(a.shape.begin(), a.shape.end());
  const int nd = static_cast<int>(dims.size());
  if (a.data == nullptr) {  // no buffer (an empty array): numpy allocates its own
    PyObject* out = PyArray_SimpleNew(nd, dims.data(), NumpyTypeNum(a.dtype));
    if (out == nullptr) throw nb::python_error();
    return nb::steal(out);
  }
  auto* keep = new std::shared_ptr<const void>(a.owner);
  nb::capsule owner(keep, [](void* p) noexcept {
    delete static_cast<std::shared_ptr<const void>*>(p);
  });
  PyObject* out = PyArray_SimpleNewFromData(nd, dims.data(), NumpyTypeNum(a.dtype),
                                            const_cast<std::byte*>(a.data));
  if (out == nullptr) throw nb::python_error();
  // Steals the reference to the capsule, also on failure.
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(out), owner.release().ptr()) < 0) {
    Py_DECREF(out);
    throw nb::python_error();
  }
  return nb::steal(out);
}

// A bfloat16 leaf (spelt/bfloat16_array.h) as a numpy array of ml_dtypes.bfloat16 viewing its bits
// (GIL held). Only Normalize(dtype="bfloat16") makes such leaves, and it needs ml_dtypes to be
// built, so the import succeeds.
nb::object BFloat16ToPython(const BFloat16Array& leaf) {
  static nb::handle bfloat16;  // the dtype, kept for the process once found
  if (!bfloat16.is_valid()) {
    nb::object type = nb::module_::import_("ml_dtypes").attr("bfloat16");
    bfloat16 = nb::module_::import_("numpy").attr("dtype")(type).release();
  }
  return ArrayToPython(leaf.bits()).attr("view")(bfloat16);
}

nb::object RebuildSequence(const Sequence& s, nb::list items) {
  if (s.tag == StackedStringsTag()) return cache->array(items);
  if (s.tag) {
    nb::handle type(static_cast<PyObject*>(const_cast<void*>(s.tag.get())));
    // A namedtuple takes its fields as arguments; any other sequence type takes an iterable.
    if (s.kind == Sequence::Kind::kTuple && nb::hasattr(type, "_fields")) {
      return type(*nb::tuple(items));
    }
    return type(items);
  }
  if (s.kind == Sequence::Kind::kTuple) return nb::tuple(items);
  return std::move(items);
}

// Stack()'s fallback for None leaves (ObjectStackFallback): np.stack leaf by leaf in Python
// (spelt._tree.stack), whose object arrays come back as Opaque leaves.
Value StackWithObjects(const std::vector<Value>& elements) {
  GilAcquire gil;
  nb::list objects;
  for (const Value& v : elements) objects.append(ToPython(v));
  try {
    return ToValue(nb::module_::import_("spelt._tree").attr("stack")(objects));
  } catch (nb::python_error& e) {
    throw std::invalid_argument("Batch: numpy.stack raised " +
                                std::string(Py_TYPE(e.value().ptr())->tp_name) + ": " +
                                nb::str(e.value()).c_str());
  }
}

// The TreeSemantics resolver (spelt/stack.h): JAX's when `jax` imports (spelt._tree.uses_jax).
TreeSemantics ResolveTreeSemantics() {
  GilAcquire gil;
  nb::object uses_jax = nb::module_::import_("spelt._tree").attr("uses_jax");
  return nb::cast<bool>(uses_jax()) ? TreeSemantics::kJax : TreeSemantics::kPlain;
}

}  // namespace

bool IsNumpyScalar(const Array& a) {
  const auto* scalar = std::get_deleter<NumpyScalarOwner>(a.owner);
  return scalar != nullptr && a.shape.empty() && a.data == scalar->data &&
         a.dtype == scalar->dtype;
}

void InitPyValue() {
  if (cache != nullptr) return;
  if (_import_array() < 0) throw nb::python_error();
  cache = new Cache();
  nb::module_ np = nb::module_::import_("numpy");
  cache->ascontiguousarray = np.attr("ascontiguousarray");
  cache->array = np.attr("array");
  cache->defaultdict = nb::module_::import_("collections").attr("defaultdict");
  cache->partial = nb::module_::import_("functools").attr("partial");
  cache->stack = np.attr("stack");
  SetObjectStackFallback(&StackWithObjects);
  SetTreeSemanticsResolver(&ResolveTreeSemantics);
}

PyRef MakePyRef(nb::handle obj) {
  Py_INCREF(obj.ptr());
  return PyRef(obj.ptr(), PyDecref{});
}

Value PyOpaque::Unpack() const {
  if (is_leaf_) return Value(std::shared_ptr<const Opaque>(shared_from_this()));
  GilAcquire gil;
  return ToValue(object());
}

std::string PyOpaque::Describe() const {
  GilAcquire gil;
  return "<Python object of type " + std::string(Py_TYPE(object().ptr())->tp_name) + ">";
}

namespace {

// Bytes of numpy arrays, bytes and str leaves of a dict / list / tuple tree, to a depth of 32
// (GIL held).
int64_t PyByteSize(PyObject* p, int depth = 0) {
  if (PyArray_Check(p)) return PyArray_NBYTES(reinterpret_cast<PyArrayObject*>(p));
  if (PyBytes_Check(p)) return PyBytes_GET_SIZE(p);
  if (PyUnicode_Check(p)) return PyUnicode_GET_LENGTH(p);
  int64_t n = 0;
  if (depth >= 32) return n;
  if (PyDict_Check(p)) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(p, &pos, &key, &value)) n += PyByteSize(value, depth + 1);
  } else if (PyList_Check(p) || PyTuple_Check(p)) {
    const Py_ssize_t size = PySequence_Fast_GET_SIZE(p);
    for (Py_ssize_t i = 0; i < size; ++i) n += PyByteSize(PySequence_Fast_GET_ITEM(p, i), depth + 1);
  }
  return n;
}

}  // namespace

int64_t PyOpaque::ByteSize() const {
  TryGil gil;
  return gil.held() ? PyByteSize(object().ptr()) : 0;
}

Value PyOpaque::StackLeaves(const std::vector<const Opaque*>& leaves) const {
  GilAcquire gil;
  nb::list objects;
  for (const Opaque* leaf : leaves) {
    const auto* py = dynamic_cast<const PyOpaque*>(leaf);
    if (py == nullptr) {
      throw std::invalid_argument("cannot stack " + Describe() + " with " + leaf->Describe());
    }
    objects.append(py->object());
  }
  try {
    return ToValue(cache->stack(objects));
  } catch (nb::python_error& e) {
    throw std::invalid_argument("numpy.stack raised " +
                                std::string(Py_TYPE(e.value().ptr())->tp_name) + ": " +
                                nb::str(e.value()).c_str());
  }
}

Value Wrap(nb::handle obj) {
  return Value(std::shared_ptr<const Opaque>(std::make_shared<PyOpaque>(obj)));
}

bool IsObject(const Value& value, nb::handle obj) {
  const auto* opaque = std::get_if<std::shared_ptr<const Opaque>>(&value.variant());
  if (opaque == nullptr) return false;
  const auto* object = dynamic_cast<const PyOpaque*>(opaque->get());
  return object != nullptr && object->object().ptr() == obj.ptr();
}

namespace {

// What rebuilds a dict subclass from its items (a Mapping's tag), as Grain's tree_lib does: the
// type itself, or for a defaultdict the type bound to the instance's default_factory.
nb::object MappingRebuilder(nb::handle dict) {
  nb::handle type(reinterpret_cast<PyObject*>(Py_TYPE(dict.ptr())));
  if (nb::isinstance(dict, cache->defaultdict)) {
    return cache->partial(type, dict.attr("default_factory"));
  }
  return nb::borrow(type);
}

// Under TreeSemantics::kJax, an object that JAX may traverse but that has no engine container
// (a registered pytree node, a dict subclass, a dict with non-str keys, a list or non-named
// tuple subclass): flattened once by jax.tree_util (spelt._tree.pytree_node) into a tuple of
// its leaves tagged with the callable that rebuilds it (the same callable for equal
// structures, so Stack() compares structures by tag). A JAX leaf, or any such object without
// JAX, is an Opaque leaf.
Value FromPytreeNode(nb::handle obj) {
  if (CurrentTreeSemantics() != TreeSemantics::kJax) return WrapLeaf(obj);
  if (!cache->pytree_node.is_valid()) {
    cache->pytree_node = nb::module_::import_("spelt._tree").attr("pytree_node");
  }
  nb::object node = cache->pytree_node(obj);
  if (node.is_none()) return WrapLeaf(obj);
  nb::handle leaves = node[0];
  auto s = std::make_shared<Sequence>();
  s->kind = Sequence::Kind::kTuple;
  const Py_ssize_t n = PyList_GET_SIZE(leaves.ptr());
  s->items.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) s->items.push_back(ToValue(PyList_GET_ITEM(leaves.ptr(), i)));
  s->tag = MakePyRef(node[1]);
  return Value(std::shared_ptr<const Sequence>(std::move(s)));
}

}  // namespace

Value ToValue(nb::handle obj) {
  PyObject* p = obj.ptr();
  if (p == Py_None) return Value();
  if (PyBool_Check(p)) return Value(p == Py_True);
  if (PyArray_Check(p)) return FromNumpy(obj);
  if (PyArray_IsScalar(p, Generic)) {
    // A number or bool exposes a 0-d buffer of its value (kept, see NumpyScalarOwner). The
    // others (str_, bytes_, void, datetime64) have no Spelt dtype: leaves, as they are.
    if (PyArray_IsScalar(p, Number) || PyArray_IsScalar(p, Bool)) return FromNumpy(obj);
    return WrapLeaf(obj);
  }
  if (PyLong_Check(p)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow != 0) return WrapLeaf(obj);
    return Value(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(p)) return Value(PyFloat_AS_DOUBLE(p));
  if (PyUnicode_Check(p)) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(p, &size);
    if (data == nullptr) throw nb::python_error();
    return Value::Text(std::string(data, static_cast<size_t>(size)));
  }
  if (PyBytes_Check(p)) {
    return Value::Bytes(std::string(PyBytes_AS_STRING(p), static_cast<size_t>(PyBytes_GET_SIZE(p))));
  }
  const bool jax = CurrentTreeSemantics() == TreeSemantics::kJax;
  if (PyDict_Check(p) && (!jax || PyDict_CheckExact(p))) {
    auto m = std::make_shared<Mapping>();
    m->items.reserve(static_cast<size_t>(PyDict_Size(p)));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(p, &pos, &key, &value)) {
      if (!PyUnicode_Check(key)) return FromPytreeNode(obj);
      Py_ssize_t size = 0;
      const char* k = PyUnicode_AsUTF8AndSize(key, &size);
      if (k == nullptr) throw nb::python_error();
      m->items.emplace_back(std::string(k, static_cast<size_t>(size)), ToValue(value));
    }
    if (!PyDict_CheckExact(p)) m->tag = MakePyRef(MappingRebuilder(obj));
    return Value(std::shared_ptr<const Mapping>(std::move(m)));
  }
  if ((PyList_Check(p) || PyTuple_Check(p)) &&
      (!jax || PyList_CheckExact(p) || PyTuple_CheckExact(p) ||
       nb::hasattr(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(p))), "_fields"))) {
    const bool is_list = PyList_Check(p);
    auto s = std::make_shared<Sequence>();
    s->kind = is_list ? Sequence::Kind::kList : Sequence::Kind::kTuple;
    const Py_ssize_t n = is_list ? PyList_GET_SIZE(p) : PyTuple_GET_SIZE(p);
    s->items.reserve(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      s->items.push_back(ToValue(is_list ? PyList_GET_ITEM(p, i) : PyTuple_GET_ITEM(p, i)));
    }
    const bool exact = is_list ? PyList_CheckExact(p) : PyTuple_CheckExact(p);
    if (!exact) s->tag = MakePyRef(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(p))));
    return Value(std::shared_ptr<const Sequence>(std::move(s)));
  }
  return FromPytreeNode(obj);
}

nb::object ToPython(const Value& value) {
  struct Visitor {
    nb::object operator()(Value::None) const { return nb::none(); }
    nb::object operator()(bool v) const { return nb::bool_(v); }
    nb::object operator()(int64_t v) const { return nb::int_(v); }
    nb::object operator()(double v) const { return nb::float_(v); }
    nb::object operator()(const String& s) const {
      if (s.is_text) return nb::str(s.data.data(), s.data.size());
      return nb::bytes(s.data.data(), s.data.size());
    }
    nb::object operator()(const Array& a) const { return ArrayToPython(a); }
    nb::object operator()(const std::shared_ptr<const Sequence>& s) const {
      nb::list items;
      for (const Value& v : s->items) items.append(ToPython(v));
      return RebuildSequence(*s, std::move(items));
    }
    nb::object operator()(const std::shared_ptr<const Mapping>& m) const {
      nb::dict d;
      for (const auto& [k, v] : m->items) d[nb::str(k.data(), k.size())] = ToPython(v);
      if (m->tag) {
        nb::handle type(static_cast<PyObject*>(const_cast<void*>(m->tag.get())));
        return type(d);
      }
      return std::move(d);
    }
    nb::object operator()(const std::shared_ptr<const Opaque>& o) const {
      if (auto* py = dynamic_cast<const PyOpaque*>(o.get())) return nb::borrow(py->object());
      if (auto* bf = dynamic_cast<const BFloat16Array*>(o.get())) {
        return BFloat16ToPython(*bf);
      }
      throw std::invalid_argument("cannot convert " + o->Describe() + " to a Python object");
    }
  };
  return std::visit(Visitor{}, value.variant());
}

}  // namespace spelt::python
