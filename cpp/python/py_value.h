// Conversion between Python objects and spelt::Value, for the nanobind module spelt._core.
//
// Python elements enter the engine lazily: an arbitrary Python object becomes an Opaque leaf
// (PyOpaque) that holds a reference and is only converted to a tree when the engine must look
// inside it (Stack). numpy arrays become Arrays without a copy (the Array's owner keeps the
// ndarray alive); engine Arrays leave as numpy arrays without a copy (a capsule keeps the
// buffer's owner alive). Unless noted, functions here REQUIRE the GIL.
#ifndef SPELT_PYTHON_PY_VALUE_H_
#define SPELT_PYTHON_PY_VALUE_H_

#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <vector>

#include "spelt/dataset.h"
#include "spelt/value.h"

namespace spelt::python {

namespace nb = nanobind;

// A strong reference to a Python object that may be released from any thread (it takes the
// GIL to decref, and leaks the reference if the interpreter is shutting down).
using PyRef = std::shared_ptr<PyObject>;
PyRef MakePyRef(nb::handle obj);

// nanobind hands a Python-owned object to C++ as a std::shared_ptr whose deleter drops the
// Python reference without gil.h's exit guards: an engine thread that released the last copy
// (a pool thread dropping a finished pipeline) while the interpreter exits was ended inside
// C++ frames (abort). Returns the same pointer owned through a PyRef, whose release skips the
// decref then. For what the engine keeps (sources, samplers, stats). REQUIRES the GIL.
template <typename T>
std::shared_ptr<T> OwnedByPyRef(std::shared_ptr<T> ptr) {
  nb::handle obj = ptr ? nb::find(ptr.get()) : nb::handle();
  if (!obj) return ptr;
  T* raw = ptr.get();
  PyRef owner = MakePyRef(obj);
  ptr.reset();  // nanobind's own reference, dropped here with the GIL held
  return std::shared_ptr<T>(std::move(owner), raw);
}

// An arbitrary Python object carried through the engine. Create it with Wrap() (or, inside
// ToValue(), as a leaf): it must be owned by a std::shared_ptr.
class PyOpaque final : public Opaque, public std::enable_shared_from_this<PyOpaque> {
 public:
  // `is_leaf`: ToValue() found that `obj` has no native representation, so Unpack() returns
  // this object itself without calling into Python.
  explicit PyOpaque(nb::handle obj, bool is_leaf = false)
      : ref_(MakePyRef(obj)), is_leaf_(is_leaf) {}
  Value Unpack() const override;  // takes the GIL unless this is a leaf
  std::string Describe() const override;
  // np.stack of the objects (which must all be PyOpaques), as ToValue() converts it: an Array
  // if numpy gives a dtype Spelt has, else an Opaque leaf (string, object, complex, datetime
  // arrays). Takes the GIL; a Python error becomes std::invalid_argument.
  Value StackLeaves(const std::vector<const Opaque*>& leaves) const override;
  // Bytes of the numpy arrays, bytes and str in the object's dict / list / tuple tree (takes
  // the GIL; 0 once the interpreter is exiting, see gil.h).
  int64_t ByteSize() const override;
  nb::handle object() const { return ref_.get(); }

 private:
  PyRef ref_;
  bool is_leaf_;
};

// The object as a lazy Opaque value (no conversion until Unpack()).
Value Wrap(nb::handle obj);
// Whether `value` is the Python object `obj` itself (a PyOpaque of it). Needs no GIL.
bool IsObject(const Value& value, nb::handle obj);
// The object converted to a tree: dict (str keys) / list / tuple / namedtuple containers,
// numpy arrays and numpy scalars as Arrays (0-d for scalars), Python bool/int/float/str/bytes
// and None as native leaves, anything else as an Opaque leaf. Under TreeSemantics::kJax
// (spelt/stack.h) other objects that JAX traverses (registered pytree nodes, dict / list /
// tuple subclasses other than namedtuples, dicts with non-str keys) are flattened once by
// jax.tree_util into a tuple of their leaves whose tag rebuilds them (spelt._tree.pytree_node).
Value ToValue(nb::handle obj);
// The Python object for a value (new reference). A 0-d Array that ToValue() made from a numpy
// scalar comes back as that scalar.
nb::object ToPython(const Value& value);
// Whether ToPython(Value(a)) gives back a numpy scalar (not an array). Needs no GIL.
bool IsNumpyScalar(const Array& a);

// Called once at module import: caches numpy types and functions.
void InitPyValue();

// None -> nullopt, else the int (TypeError if it is not one).
inline std::optional<int64_t> OptInt(const nb::object& o) {
  if (o.is_none()) return std::nullopt;
  return nb::cast<int64_t>(o);
}

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_VALUE_H_
