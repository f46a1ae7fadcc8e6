// Remote files over Arrow C++'s filesystems (S3, GCS, Azure, HDFS as built into the pyarrow
// wheel's libarrow), as the C table of spelt/native_files_abi.h: libspelt reads and writes
// through them with no Python and no GIL (spelt/native_file_system.h), in spelt._core and in
// C++ programs linking libspelt_arrow (spelt/arrow_file_system.h).
//
// Reads: a batch of ranges goes out at once on the process's request pool (request_pool.h:
// the in-flight limit), each range read straight into its destination with
// arrow::io::RandomAccessFile::ReadAt (thread-safe: one handle per open object).
//
// Faults, as the Python path (spelt._remote_reads) handles them: after Arrow's own retries
// (the filesystem's retry_strategy), a request that failed in a way that may pass (throttling,
// 500 / 503, a reset, a timeout, a body cut short) is retried with jittered backoff (50 ms
// doubling to 2 s) until the retry time (spelt.config.remote_retry_seconds) has passed since
// its first try, then fails naming the URI and byte offset. Before each retry the object is
// looked up again: a size or modification time other than at open, or no object, is
// SPELT_FILES_CORRUPT ("changed" / "removed"). A range past the size seen at open is
// SPELT_FILES_CORRUPT without a request. Every range is filled whole, once.
//
// Thread-safety: everything may be called from any thread at once.
#ifndef SPELT_PARQUET_NATIVE_ARROW_FILES_H_
#define SPELT_PARQUET_NATIVE_ARROW_FILES_H_

#include <arrow/filesystem/filesystem.h>

#include <cstdint>
#include <memory>
#include <string>

#include "request_pool.h"
#include "spelt/native_files_abi.h"

namespace spelt::parquet_native {

// Process-wide settings (spelt.config's remote_* flags), pushed by Python when they change.
struct RemoteSettings {
  int max_in_flight = kDefaultMaxInFlight;
  double retry_seconds = 60;
  uint64_t read_ahead_bytes = uint64_t{32} << 20;  // for files opened after the change
};
void Configure(const RemoteSettings& settings);

// The process's native requests since it started (retries included), bytes received,
// retries, requests in flight now, and the most in flight at once.
struct RemoteCounters {
  int64_t requests = 0;
  int64_t bytes = 0;
  int64_t retries = 0;
  int64_t in_flight = 0;
  int64_t peak_in_flight = 0;
};
RemoteCounters Counters();

// `fs`, or an equal filesystem whose client keeps at least `connections` connections. Arrow's
// S3 client keeps max(25, its IOContext executor's capacity): an S3FileSystem is made again
// from its options (credentials, endpoint, retry strategy: S3FileSystem::options()) with an
// executor of that capacity (process-wide, one per capacity). Other filesystems, and any where
// libarrow_s3 was not linked (SPELT_ARROW_S3 0), are returned as they are.
std::shared_ptr<arrow::fs::FileSystem> WithConnections(std::shared_ptr<arrow::fs::FileSystem> fs,
                                                       int connections);

// A new table over `fs`. `description` is what errors name as the library
// ("pyarrow.fs.S3FileSystem"). The table holds one reference to its files; FreeTable drops it
// and frees the table.
SpeltNativeFiles* NewArrowFiles(std::shared_ptr<arrow::fs::FileSystem> fs,
                                std::string description);
void FreeTable(SpeltNativeFiles* table);

}  // namespace spelt::parquet_native

#endif  // SPELT_PARQUET_NATIVE_ARROW_FILES_H_
