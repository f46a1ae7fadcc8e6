// spelt/native_files_abi.h: remote files as a plain C table of function pointers, so that code
// built with another C++ ABI can serve libspelt's readers and writers.
//
// Why C: the producer is compiled with the _GLIBCXX_USE_CXX11_ABI of the Arrow C++ it links
// (the pyarrow wheel's libarrow: cmake/spelt-pyarrow.cmake), which may differ from libspelt's,
// so no C++ type (std::string, std::shared_ptr, a vtable taking them) crosses between them.
// Only this struct does: fixed-width integers, char pointers and function pointers, the same
// under either ABI.
//
// The producer (cpp/parquet_native/arrow_files.h) implements the table over Arrow C++'s
// filesystems (S3, GCS, Azure, HDFS, local) without Python; the consumer
// (spelt/native_file_system.h) wraps it as a spelt::FileSystem. Two users: the Python module
// spelt._parquet_native hands a table to spelt._core in a PyCapsule named
// SPELT_NATIVE_FILES_CAPSULE (the capsule owns one reference to `files`, released by its
// destructor), and libspelt_arrow (spelt/arrow_file_system.h) makes one for C++ programs. A
// consumer that keeps the table takes its own reference with retain().
//
// Errors: a function that fails returns null / nonzero and fills *error (kind and a
// NUL-terminated message, cut to fit). Thread-safety: every function may be called from any
// thread at once, without the GIL, except that one writer is used by one thread at a time.
#ifndef SPELT_NATIVE_FILES_ABI_H_
#define SPELT_NATIVE_FILES_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPELT_NATIVE_FILES_CAPSULE "spelt.native_files.v1"
#define SPELT_NATIVE_FILES_VERSION 1

enum SpeltFilesErrorKind {
  SPELT_FILES_OK = 0,
  SPELT_FILES_NOT_FOUND = 1,  // message: the whole message (Python: FileNotFoundError)
  SPELT_FILES_CORRUPT = 2,    // message: the detail after "<uri>: corrupt remote file at byte
                              // offset <offset>: " (Python: spelt CorruptFileError)
  SPELT_FILES_IO = 3,         // message: the whole message (Python: OSError)
};

typedef struct SpeltFilesError {
  int32_t kind;     // SpeltFilesErrorKind
  uint64_t offset;  // SPELT_FILES_CORRUPT: the byte offset
  char message[2048];
} SpeltFilesError;

// `length` bytes at `offset` into `dst`.
typedef struct SpeltFilesRange {
  uint64_t offset;
  uint64_t length;
  char* dst;
} SpeltFilesRange;

typedef struct SpeltNativeFiles {
  uint32_t version;  // SPELT_NATIVE_FILES_VERSION
  void* files;       // the filesystem, reference-counted
  void (*retain)(void* files);
  void (*release)(void* files);

  // Opens `uri` (NUL-terminated) for reading: the file, its size, and the bytes a front-to-back
  // reader keeps being read ahead (spelt.config.remote_read_ahead_mib when opened). Null on
  // error.
  void* (*open_read)(void* files, const char* uri, uint64_t* size, uint64_t* read_ahead,
                     SpeltFilesError* error);
  // Reads every range (whole, each exactly once; sent concurrently, retried on transient
  // faults). 0 on success.
  int (*read_ranges)(void* file, const SpeltFilesRange* ranges, size_t count,
                     SpeltFilesError* error);
  void (*close_read)(void* file);

  // Creates or replaces `uri` for writing. Null on error.
  void* (*open_write)(void* files, const char* uri, SpeltFilesError* error);
  int (*write)(void* file, const char* data, size_t size, SpeltFilesError* error);
  // Completes the object and frees `file` (also on error). 0 on success.
  int (*close_write)(void* file, SpeltFilesError* error);
  // Abandons the object (none is left behind, best effort) and frees `file`.
  void (*discard_write)(void* file);
} SpeltNativeFiles;

#ifdef __cplusplus
}
#endif

#endif  // SPELT_NATIVE_FILES_ABI_H_
