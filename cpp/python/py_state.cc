// Implementation of py_state.h.
#include "py_state.h"

#include <nanobind/stl/string.h>

#include <climits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "spelt/interleave.h"
#include "spelt/packing_options.h"

namespace spelt::python {
namespace {

// The fields whose Python types JSON cannot hold (see py_state.h).
constexpr std::string_view kIntKeyedField = kFutureStatesKey;
constexpr std::string_view kTupleValuedField = kRemainderSlicesKey;

nb::object ToPython(const State& state);

// A field's value, with the Python types of kIntKeyedField and kTupleValuedField.
nb::object FieldToPython(std::string_view key, const State& value) {
  if (!value.is_object() || (key != kIntKeyedField && key != kTupleValuedField)) {
    return ToPython(value);
  }
  nb::dict out;
  for (const auto& [k, v] : value.items()) {
    if (key == kTupleValuedField) {
      nb::object item = ToPython(v);
      if (v.is_array()) item = nb::steal(PySequence_Tuple(item.ptr()));
      out[nb::str(k.c_str(), k.size())] = item;
    } else {
      nb::object index = nb::steal(PyLong_FromString(k.c_str(), nullptr, 10));
      if (!index.is_valid()) throw nb::python_error();
      out[index] = ToPython(v);
    }
  }
  return std::move(out);
}

nb::object ToPython(const State& state) {
  switch (state.type()) {
    case State::value_t::null:
      return nb::none();
    case State::value_t::boolean:
      return nb::bool_(state.get<bool>());
    case State::value_t::number_integer:
      return nb::steal(PyLong_FromLongLong(state.get<int64_t>()));
    case State::value_t::number_unsigned:
      return nb::steal(PyLong_FromUnsignedLongLong(state.get<uint64_t>()));
    case State::value_t::number_float:
      return nb::float_(state.get<double>());
    case State::value_t::string: {
      const auto& s = state.get_ref<const std::string&>();
      return nb::str(s.c_str(), s.size());
    }
    case State::value_t::array: {
      nb::list items;
      for (const State& item : state) items.append(ToPython(item));
      return std::move(items);
    }
    case State::value_t::object: {
      nb::dict out;
      for (const auto& [key, value] : state.items()) {
        out[nb::str(key.c_str(), key.size())] = FieldToPython(key, value);
      }
      return std::move(out);
    }
    default:
      throw std::invalid_argument("state holds a value with no Python form");
  }
}

[[noreturn]] void Fail(const std::string& path, const std::string& what) {
  throw std::invalid_argument("state" + path + ": " + what);
}

State FromPython(nb::handle obj, const std::string& path);

std::string KeyOf(nb::handle key, const std::string& path) {
  if (nb::isinstance<nb::str>(key)) return nb::cast<std::string>(key);
  if (PyLong_Check(key.ptr()) && !PyBool_Check(key.ptr())) {
    return nb::cast<std::string>(nb::str(key));
  }
  Fail(path,
       "a key must be a str or an int, got " + std::string(nb::type_name(key.type()).c_str()));
}

State IntFromPython(nb::handle obj, const std::string& path) {
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  if (overflow == 0) {
    if (value == -1 && PyErr_Occurred()) throw nb::python_error();
    return State(static_cast<int64_t>(value));
  }
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(obj.ptr());
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
      return State(static_cast<uint64_t>(u));
    }
    PyErr_Clear();
  }
  // IndexError, as an index past the end (Grain's error for an out-of-range next_index).
  throw std::out_of_range("state" + path + ": " + nb::cast<std::string>(nb::str(obj)) +
                          " is out of range (the engine's positions and counters are 64-bit)");
}

State FromPython(nb::handle obj, const std::string& path) {
  static const nb::handle numpy_generic =  // never released: lives as long as numpy
      nb::object(nb::module_::import_("numpy").attr("generic")).release();
  if (obj.is_none()) return State(nullptr);
  if (PyBool_Check(obj.ptr())) return State(obj.ptr() == Py_True);
  if (PyLong_Check(obj.ptr())) return IntFromPython(obj, path);
  if (PyFloat_Check(obj.ptr())) return State(PyFloat_AsDouble(obj.ptr()));
  if (nb::isinstance<nb::str>(obj)) return State(nb::cast<std::string>(obj));
  if (PyDict_Check(obj.ptr())) {
    State out = State::object();
    for (auto [key, value] : nb::borrow<nb::dict>(obj)) {
      std::string k = KeyOf(key, path);
      std::string item_path = path + "[" + nb::cast<std::string>(nb::repr(key)) + "]";
      out[k] = FromPython(value, item_path);
    }
    return out;
  }
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
    State out = State::array();
    Py_ssize_t i = 0;
    for (nb::handle item : obj) {
      out.push_back(FromPython(item, path + "[" + std::to_string(i++) + "]"));
    }
    return out;
  }
  if (PyObject_IsInstance(obj.ptr(), numpy_generic.ptr()) == 1) {
    return FromPython(obj.attr("item")(), path);  // np.int64 from numpy arithmetic, as Grain's
  }
  Fail(path, "a value of type " + std::string(nb::type_name(obj.type()).c_str()) +
                 " has no JSON form (a state holds dicts, lists, numbers, str, bool and None)");
}

}  // namespace

nb::object StateToPython(const State& state) { return ToPython(state); }

State StateFromPython(nb::handle obj) { return FromPython(obj, ""); }

}  // namespace spelt::python
