#include "unwrap_filesystem.h"

#include <cstring>

namespace spelt::parquet_native {

std::shared_ptr<arrow::fs::FileSystem> UnwrapFileSystem(PyObject* object, PyObject* base_type) {
  using Wrapped = std::shared_ptr<arrow::fs::FileSystem>;
  constexpr Py_ssize_t kFields = sizeof(Wrapped) + sizeof(arrow::fs::FileSystem*);
  if (!PyType_Check(base_type) || PyObject_IsInstance(object, base_type) != 1) {
    PyErr_Clear();
    return nullptr;
  }
  const Py_ssize_t end = reinterpret_cast<PyTypeObject*>(base_type)->tp_basicsize;
  if (end < static_cast<Py_ssize_t>(sizeof(PyObject)) + kFields) return nullptr;
  const char* base = reinterpret_cast<const char*>(object);
  const auto* wrapped = reinterpret_cast<const Wrapped*>(base + end - kFields);
  arrow::fs::FileSystem* raw;
  std::memcpy(&raw, base + end - sizeof(raw), sizeof(raw));
  if (raw == nullptr || wrapped->get() != raw) return nullptr;
  return *wrapped;
}

}  // namespace spelt::parquet_native
