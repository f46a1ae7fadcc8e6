// The Arrow C++ filesystem inside a pyarrow.fs.FileSystem object.
//
// pyarrow exports no C function for this (its C++ API, arrow/python/pyarrow.h, unwraps
// arrays, tables and buffers but not filesystems), so it is read from the Cython object: a
// pyarrow.fs.FileSystem ends with `shared_ptr[CFileSystem] wrapped` followed by
// `CFileSystem* fs` (pyarrow/_fs.pxd), the last fields of the base type's instance. The read is
// checked before it is trusted: the object is an instance of the base type, whose size leaves
// room for both fields after the object header, and the raw pointer equals the shared_ptr's
// (the same object, non-null). An object that fails a check gives null, and Python reads
// through its slower path. This module links the same libarrow as pyarrow (the wheel's), so the
// shared_ptr's type and layout are pyarrow's own.
#ifndef SPELT_PARQUET_NATIVE_UNWRAP_FILESYSTEM_H_
#define SPELT_PARQUET_NATIVE_UNWRAP_FILESYSTEM_H_

#include <Python.h>
#include <arrow/filesystem/filesystem.h>

#include <memory>

namespace spelt::parquet_native {

// A new reference to `object`'s filesystem, or null if it is not one (see above).
// `base_type` is pyarrow.fs.FileSystem. REQUIRES: the GIL held.
std::shared_ptr<arrow::fs::FileSystem> UnwrapFileSystem(PyObject* object, PyObject* base_type);

}  // namespace spelt::parquet_native

#endif  // SPELT_PARQUET_NATIVE_UNWRAP_FILESYSTEM_H_
