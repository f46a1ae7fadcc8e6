// A FileSystem (spelt/file_system.h) whose files a Python object opens and reads: Spelt's
// slower fallback for object stores, backing pyarrow.fs and fsspec filesystems
// (spelt._file_system.Files builds the object).
#ifndef SPELT_PYTHON_PY_FILE_SYSTEM_H_
#define SPELT_PYTHON_PY_FILE_SYSTEM_H_

#include <nanobind/nanobind.h>

#include "spelt/file_system.h"

namespace spelt::python {

namespace nb = nanobind;

// `files`, or null for None (then each URI opens by its scheme: local files). `files` has
//   open_input(uri) -> object with `size` (int), `read_ahead` (int: bytes that sequential
//     readers keep being read ahead, RandomAccessFile::ReadAheadBytes) and
//     read_ranges(list of (offset, length)) -> list of bytes-like, one per range (shorter
//     only where the object ends);
//   open_output(uri) -> object with write(bytes), close() and discard() (abandon: the file
//     is not left behind).
// Unless `files.native` is a capsule of native files (spelt._parquet_native over Arrow C++'s
// filesystems, spelt/native_file_system.h): then those open and read the files, without
// Python.
// Each call takes the GIL for the call only; Python exceptions propagate (nb::python_error).
// Thread-safe as the Python object is (a read may run on any engine thread).
FileSystemPtr PyFileSystem(nb::handle files);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_FILE_SYSTEM_H_
