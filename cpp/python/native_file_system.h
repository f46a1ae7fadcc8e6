// A spelt::FileSystem over the native remote files of spelt._parquet_native (Arrow C++'s
// filesystems): reads and writes go from the engine's threads to the store with no Python and
// no GIL (a call made holding the GIL, as a binding opening a file does, drops it while it
// waits). The table crosses the module boundary as plain C (native_files_abi.h).
#ifndef SPELT_PYTHON_NATIVE_FILE_SYSTEM_H_
#define SPELT_PYTHON_NATIVE_FILE_SYSTEM_H_

#include <nanobind/nanobind.h>

#include "spelt/file_system.h"

namespace spelt::python {

namespace nb = nanobind;

// The FileSystem of `capsule` (a PyCapsule named SPELT_NATIVE_FILES_CAPSULE; it may die
// first: the FileSystem keeps its own reference). Throws std::invalid_argument for another
// object or table version. REQUIRES: the GIL held.
//
// Errors of the files: FileNotFoundError (std::system_error ENOENT) for a missing object,
// CorruptFileError for an object shorter than asked for or changed since it was opened,
// OSError (std::system_error EIO) otherwise; each message names the URI. Thread-safe.
FileSystemPtr NativeFileSystem(nb::handle capsule);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_NATIVE_FILE_SYSTEM_H_
