// spelt/arrow_file_system.h: remote files for C++ programs through Arrow C++'s filesystems
// (S3, GCS, Azure, HDFS), the same native path that Spelt's Python module takes for pyarrow
// filesystems (docs/remote.md). Declared here, defined in libspelt_arrow (CMake target
// spelt::arrow), which is built where Arrow C++ is found: the libarrow of the pyarrow wheel
// importable by the build's Python (option SPELT_ARROW_FILE_SYSTEMS,
// cmake/spelt-arrow-file-systems.cmake). Programs of the build tree link it (it links libspelt
// and that libarrow and libarrow_s3 by path; `cmake --install` leaves it out) and run with that
// libarrow.
//
//   spelt::RegisterArrowFileSystems();
//   auto reader = spelt::ArrayRecordReader::Open("s3://bucket/train-00000-of-00008", {});
//
// Configuration is Arrow's own, from the standard places, per URI as pyarrow.fs's from_uri
// reads it: for S3, AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, the
// ~/.aws/credentials and ~/.aws/config profiles (AWS_PROFILE), instance metadata, the region
// (AWS_DEFAULT_REGION, else looked up for the bucket) and AWS_ENDPOINT_URL (an S3-compatible
// server); for GCS, Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS); for Azure,
// AZURE_STORAGE_ACCOUNT_NAME / AZURE_STORAGE_ACCOUNT_KEY. Options that Arrow takes in a URI's
// query (endpoint_override=127.0.0.1:9000&scheme=http, region=...) go through ArrowFileSystem.
//
// Reads: a batch of reads (RandomAccessFile::ReadMany) goes out as concurrent range requests
// on one process-wide pool of request threads, at most ArrowFilesSettings::max_in_flight at
// once; transient faults (throttling, 500 / 503, resets, timeouts, short bodies) are retried
// with backoff until retry_seconds have passed; HighLatency() is true, so the readers batch
// their reads and read front-to-back files ahead in windows (docs/remote.md, "How reads go
// out"). Writes: an object appears whole when its WritableFile is closed (an S3 multipart
// upload); one destroyed unclosed leaves none.
//
// Errors, each naming the URI: opening a URI whose filesystem cannot be made (a scheme this
// libarrow lacks, a malformed URI, a bucket whose region cannot be looked up) throws
// std::runtime_error; a missing object std::system_error ENOENT; an object shorter than its
// index says, or changed (size or modification time) since it was opened, CorruptFileError
// (spelt/errors.h); other failures (credentials, a missing bucket, retries exhausted)
// std::system_error EIO with Arrow's message.
//
// Thread-safety: every function and every file system may be used from any thread at once.
#ifndef SPELT_ARROW_FILE_SYSTEM_H_
#define SPELT_ARROW_FILE_SYSTEM_H_

#include <cstdint>
#include <string>

#include "spelt/file_system.h"

namespace spelt {

// The URI schemes RegisterArrowFileSystems registers (those Spelt's Python module opens through
// pyarrow.fs).
inline constexpr const char* kArrowSchemes[] = {"s3",     "gs",   "gcs", "hdfs",
                                                "viewfs", "abfs", "abfss"};

// The process's settings of all Arrow files (spelt.config's remote_* flags in Python).
struct ArrowFilesSettings {
  int max_in_flight = 256;     // range requests waiting on stores at once (>= 1)
  double retry_seconds = 60;   // how long a request's transient faults are retried
  uint64_t read_ahead_bytes = uint64_t{32} << 20;  // RandomAccessFile::ReadAheadBytes
};

// Applies `settings`: the in-flight limit to the requests sent after the call, the read-ahead
// to files opened after it.
void ConfigureArrowFileSystems(const ArrowFilesSettings& settings);

// The FileSystem of the Arrow filesystem that arrow::fs::FileSystemFromUri makes of `uri`
// (its path is ignored; its query options apply: "s3://?endpoint_override=...&scheme=http").
// It opens URIs of that scheme ("s3://bucket/key", any bucket). Pass it to the readers and
// writers, or register it (RegisterFileSystem). Throws std::runtime_error naming the URI where
// Arrow cannot make the filesystem.
FileSystemPtr ArrowFileSystem(const std::string& uri);

// Registers (spelt/file_system.h's RegisterFileSystem) a FileSystem for each of kArrowSchemes,
// replacing earlier ones, which opens each URI through ArrowFileSystem("scheme://authority")
// (made on first use for each scheme and bucket or host, then kept).
void RegisterArrowFileSystems();

}  // namespace spelt

#endif  // SPELT_ARROW_FILE_SYSTEM_H_
