// spelt/file_system.h: the files under every reader and writer (ArrayRecord, TFRecord).
//
// A FileSystem opens files by path or URI: a RandomAccessFile to read at offsets (one read, or
// a batch of reads issued at once so that a remote store answers them concurrently) and a
// WritableFile to write a new file front to back. Which FileSystem opens a URI is chosen by its
// scheme ("s3" in s3://bucket/key) from a process-wide registry, unless the caller passes one:
// plain paths and file:// URIs (RFC 8089, host empty or "localhost") open with the local one,
// which reads with pread(2) on one descriptor. C++ programs linking libspelt_arrow register
// Arrow C++'s filesystems for s3://, gs://, ... (spelt/arrow_file_system.h). The Python module
// registers nothing; it passes its own FileSystem to the readers and writers it opens: for a
// pyarrow.fs filesystem the native one over Arrow C++ (spelt/native_file_system.h, no GIL),
// else one backed by Python (fsspec; cpp/python/py_file_system.h).
//
// Thread-safety: a RandomAccessFile is safe to read from many threads at once; a WritableFile
// is used by one thread at a time; FileSystems and the registry are safe from any thread.
// Errors: std::system_error naming the URI for an OS error of the local files; a remote
// FileSystem throws what it must (std::runtime_error naming the URI); a read past the end of a
// file (it shrank since it was opened) throws CorruptFileError naming the URI and offset.
#ifndef SPELT_FILE_SYSTEM_H_
#define SPELT_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace spelt {

// One read of a batch: `length` bytes at `offset` into `dst` (which holds at least `length`).
struct ReadRequest {
  uint64_t offset = 0;
  uint64_t length = 0;
  char* dst = nullptr;
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  // The path or URI it was opened with (what errors name).
  virtual const std::string& path() const = 0;
  // The size in bytes when opened.
  virtual uint64_t size() const = 0;
  // Reads exactly `n` bytes at `offset` into `dst`. Throws CorruptFileError if the file ends
  // first.
  virtual void ReadAt(uint64_t offset, char* dst, uint64_t n) const = 0;
  // Every request of `requests`, as ReadAt would, issued together where the file can (a remote
  // file sends them concurrently; the local one reads contiguous requests with one preadv).
  // On an exception some destinations may be filled, others not.
  virtual void ReadMany(std::span<const ReadRequest> requests) const;
  // Whether each read waits long to start (a remote store: milliseconds or more), so that a
  // reader should gather the reads of a batch into one ReadMany (all in flight at once)
  // rather than read on a few threads one after another. False for local files.
  virtual bool HighLatency() const { return false; }
  // How many bytes a reader that goes front to back keeps being read ahead of the bytes it
  // consumes on a HighLatency() file (several windows in flight at once, so that their round
  // trips overlap); at least one window is read ahead. 0 for local files (read directly).
  virtual uint64_t ReadAheadBytes() const { return 0; }

 protected:
  RandomAccessFile() = default;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;

  virtual const std::string& path() const = 0;
  // Appends `bytes`. Unbuffered where the store allows: callers write large pieces (the
  // writers buffer a MiB). Remote files may keep the bytes until Close().
  virtual void Write(std::string_view bytes) = 0;
  // Finishes the file: after a successful Close() it is complete at its path. A file
  // destroyed without Close() may be left partial (local) or not be created at all (remote).
  virtual void Close() = 0;

 protected:
  WritableFile() = default;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Opens `uri` for reading. Throws (naming the URI) if it does not exist or cannot be read.
  virtual std::unique_ptr<RandomAccessFile> OpenForRead(const std::string& uri) const = 0;
  // Creates or truncates `uri` (a local file's folder must exist).
  virtual std::unique_ptr<WritableFile> OpenForWrite(const std::string& uri) const = 0;
};

using FileSystemPtr = std::shared_ptr<const FileSystem>;

// The local filesystem: plain paths and file:// URIs.
const FileSystemPtr& LocalFileSystem();

// The scheme of `uri` in lower case ("s3" for "S3://b/k"), or "" for a plain path.
std::string UriScheme(std::string_view uri);

// Makes `fs` open the URIs of `scheme` (lower case, without "://"), replacing any earlier one;
// a null `fs` removes it. "" and "file" are the local filesystem unless replaced.
void RegisterFileSystem(const std::string& scheme, FileSystemPtr fs);

// The filesystem registered for `uri`'s scheme. Throws std::invalid_argument naming the URI if
// none is.
FileSystemPtr FileSystemFor(const std::string& uri);

// `uri` opened with `fs`, or with FileSystemFor(uri) when `fs` is null.
std::unique_ptr<RandomAccessFile> OpenRandomAccessFile(const std::string& uri,
                                                       const FileSystemPtr& fs = nullptr);
std::unique_ptr<WritableFile> OpenWritableFile(const std::string& uri,
                                               const FileSystemPtr& fs = nullptr);

}  // namespace spelt

#endif  // SPELT_FILE_SYSTEM_H_
