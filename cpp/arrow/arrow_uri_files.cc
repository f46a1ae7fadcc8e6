// Compiled with the _GLIBCXX_USE_CXX11_ABI of the linked Arrow C++ (arrow_uri_files.h).
#include "arrow_uri_files.h"

#include <arrow/filesystem/filesystem.h>
#include <arrow/result.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "arrow_files.h"

namespace {

// Arrow's filesystems (S3's AWS SDK) are finalized at exit, once one was made: left to the
// SDK's own static teardown, S3 may crash the exit (Arrow warns so). Registered after the
// first filesystem was made, so that it runs before that teardown.
void FinalizeAtExit() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit([] { arrow::fs::EnsureFinalized(); }); });
}

}  // namespace

extern "C" SpeltNativeFiles* spelt_arrow_files_from_uri(const char* uri, int connections,
                                                        SpeltFilesError* error) {
  arrow::Result<std::shared_ptr<arrow::fs::FileSystem>> fs = arrow::fs::FileSystemFromUri(uri);
  FinalizeAtExit();
  if (!fs.ok()) {
    error->kind = SPELT_FILES_IO;
    error->offset = 0;
    std::snprintf(error->message, sizeof(error->message),
                  "cannot make an Arrow C++ filesystem of '%s': %s. Check the URI, that this"
                  " libarrow has the scheme's filesystem, and its credentials (environment"
                  " variables, profile files)",
                  uri, fs.status().ToString().c_str());
    return nullptr;
  }
  const std::string type = (*fs)->type_name();
  return spelt::parquet_native::NewArrowFiles(
      spelt::parquet_native::WithConnections(*fs, connections),
      "Arrow C++'s " + type + " filesystem");
}

extern "C" void spelt_arrow_files_free(SpeltNativeFiles* table) {
  spelt::parquet_native::FreeTable(table);
}

extern "C" void spelt_arrow_files_configure(int max_in_flight, double retry_seconds,
                                            uint64_t read_ahead_bytes) {
  spelt::parquet_native::Configure({max_in_flight, retry_seconds, read_ahead_bytes});
}
