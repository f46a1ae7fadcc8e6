// The C functions between the two halves of libspelt_arrow (spelt/arrow_file_system.h):
// arrow_uri_files.cc, compiled with the _GLIBCXX_USE_CXX11_ABI of the Arrow C++ it links
// (cmake/spelt-arrow-file-systems.cmake), makes native files (spelt/native_files_abi.h) of an
// Arrow filesystem; arrow_file_system.cc, compiled with libspelt's ABI, wraps them as
// spelt::FileSystems. Only C types cross. Thread-safe.
#ifndef SPELT_ARROW_ARROW_URI_FILES_H_
#define SPELT_ARROW_ARROW_URI_FILES_H_

#include <stdint.h>

#include "spelt/native_files_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

// A new table over the Arrow filesystem that arrow::fs::FileSystemFromUri makes of `uri`
// (NUL-terminated; its path is ignored, its query options apply), an S3 one made with a client
// of `connections` connections. Null with *error (SPELT_FILES_IO, naming the URI) on failure.
// spelt_arrow_files_free frees the table and drops its reference to the files.
SpeltNativeFiles* spelt_arrow_files_from_uri(const char* uri, int connections,
                                             SpeltFilesError* error);
void spelt_arrow_files_free(SpeltNativeFiles* table);

// The process's settings of every table's files (the in-flight limit, the retry time in
// seconds, the read-ahead in bytes for files opened after the call).
void spelt_arrow_files_configure(int max_in_flight, double retry_seconds,
                                 uint64_t read_ahead_bytes);

#ifdef __cplusplus
}
#endif

#endif  // SPELT_ARROW_ARROW_URI_FILES_H_
