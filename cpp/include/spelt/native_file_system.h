// spelt/native_file_system.h: a spelt::FileSystem over remote files given as the C table of
// spelt/native_files_abi.h (Arrow C++'s filesystems, from spelt._parquet_native for the Python
// module, or from libspelt_arrow for C++ programs: spelt/arrow_file_system.h). Reads and
// writes go from the calling threads to the table's functions with no Python; a ReadMany
// plans its ranges (spelt/range_reads.h: coalesced, split) and hands them over as one batch,
// reading each range in place where it lies within one request. Calls that wait on the store
// go through BlockingWait (spelt/blocking_wait.h), so an embedder's lock (the Python module's
// GIL) is dropped while they wait.
#ifndef SPELT_NATIVE_FILE_SYSTEM_H_
#define SPELT_NATIVE_FILE_SYSTEM_H_

#include "spelt/file_system.h"
#include "spelt/native_files_abi.h"

namespace spelt {

// The FileSystem of `table` (copied; it holds its own reference to `table.files`, so the
// caller may drop its own). Throws std::invalid_argument if `table.version` is not
// SPELT_NATIVE_FILES_VERSION.
//
// Errors of the files, each naming the URI: std::system_error ENOENT for a missing object,
// CorruptFileError for an object shorter than asked for or changed since it was opened,
// std::system_error EIO otherwise (their what() is the table's message). Thread-safe, as the
// table's functions are.
FileSystemPtr NativeFileSystem(const SpeltNativeFiles& table);

}  // namespace spelt

#endif  // SPELT_NATIVE_FILE_SYSTEM_H_
