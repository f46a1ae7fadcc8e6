#include "arrow_files.h"

#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <arrow/status.h>
#include <arrow/util/thread_pool.h>
#include <pthread.h>
#if SPELT_ARROW_S3
#include <arrow/filesystem/s3fs.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <regex>
#include <thread>
#include <utility>

#include "request_pool.h"

namespace spelt::parquet_native {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kBackoffFirstS = 0.05;
constexpr double kBackoffMaxS = 2.0;

std::atomic<double> retry_seconds{60};
std::atomic<uint64_t> read_ahead_bytes{uint64_t{32} << 20};

struct AtomicCounters {
  std::atomic<int64_t> requests{0}, bytes{0}, retries{0}, in_flight{0}, peak_in_flight{0};
} counters;

// A forked child has none of the parent's request threads (request_pool.h gives it a new
// pool): the requests counted in flight at the fork never finish there, so its count starts
// at 0, as spelt._remote_reads._after_fork_in_child does for the Python path.
[[maybe_unused]] const int reset_in_flight_after_fork = pthread_atfork(
    nullptr, nullptr, [] { counters.in_flight.store(0, std::memory_order_relaxed); });

void CountStart(bool retry) {
  counters.requests.fetch_add(1, std::memory_order_relaxed);
  if (retry) counters.retries.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = counters.in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
  int64_t peak = counters.peak_in_flight.load(std::memory_order_relaxed);
  while (now > peak && !counters.peak_in_flight.compare_exchange_weak(peak, now)) {
  }
}

// Errors worth another try, as spelt._remote_reads._TRANSIENT matches them.
bool IsTransient(const arrow::Status& status) {
  static const std::regex transient(
      R"(\b(50[0-9]|429|slow[ _]?down|throttl\w*|service[ _]?unavailable|)"
      R"(internal[ _]?(error|failure)|request[ _]?timeout|timed? ?out|reset|connection|)"
      R"(broken pipe|partial file|incomplete ?read|payload|network_connection|curl ?code|)"
      R"(reduce your request rate|try again)\b)",
      std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
  return std::regex_search(status.message(), transient);
}

// What Python calls the error pyarrow raises for `status`.
std::string ErrorName(const arrow::Status& status) {
  if (status.IsIOError()) return "OSError";
  if (status.IsInvalid()) return "ArrowInvalid";
  return "ArrowException";
}

std::string Quoted(const std::string& uri) { return "'" + uri + "'"; }

std::string Trimmed(std::string message) {
  while (!message.empty() && message.back() == '.') message.pop_back();
  return message;
}

void Fail(SpeltFilesError* error, SpeltFilesErrorKind kind, const std::string& message,
          uint64_t offset = 0) {
  error->kind = kind;
  error->offset = offset;
  std::snprintf(error->message, sizeof(error->message), "%s", message.c_str());
}

// The path of `uri` on an Arrow filesystem: "bucket/key" for "s3://bucket/key".
std::string PathOn(const std::string& uri) {
  static const std::regex scheme(R"(^[A-Za-z][A-Za-z0-9+.-]*://)");
  std::smatch match;
  return std::regex_search(uri, match, scheme) ? uri.substr(match.length()) : uri;
}

struct Files {
  std::atomic<int> refs{1};
  std::shared_ptr<arrow::fs::FileSystem> fs;
  std::string description;

  // The error of a failed lookup or open, as spelt._file_system.Files.call words it.
  void FailCall(SpeltFilesError* error, const char* what, const std::string& uri,
                const arrow::Status& status) const {
    Fail(error, SPELT_FILES_IO,
         std::string("cannot ") + what + " " + Quoted(uri) + " through " + description + ": " +
             ErrorName(status) + ": " + Trimmed(status.message()) +
             ". Check the URI, that the bucket exists, and the credentials of that library"
             " (environment variables, profile files; or pass filesystem=)");
  }
  void FailNotFound(SpeltFilesError* error, const std::string& uri) const {
    Fail(error, SPELT_FILES_NOT_FOUND, "no such file: " + Quoted(uri) + " (" + description + ")");
  }
};

void Retain(void* files) { static_cast<Files*>(files)->refs.fetch_add(1); }
void Release(void* files) {
  auto* f = static_cast<Files*>(files);
  if (f->refs.fetch_sub(1) == 1) delete f;
}

// One object open for reading.
class Input {
 public:
  Input(Files* files, std::string uri, arrow::fs::FileInfo info,
        std::shared_ptr<arrow::io::RandomAccessFile> handle)
      : files_(files), uri_(std::move(uri)), info_(std::move(info)), handle_(std::move(handle)) {
    Retain(files_);
  }
  ~Input() { Release(files_); }

  uint64_t size() const { return static_cast<uint64_t>(info_.size()); }

  // Fills `ranges`; false with *error on failure (the first range's error).
  bool Read(const SpeltFilesRange* ranges, size_t count, SpeltFilesError* error) {
    for (size_t i = 0; i < count; ++i) {
      if (ranges[i].offset + ranges[i].length > size()) {
        Fail(error, SPELT_FILES_CORRUPT,
             "the object has " + std::to_string(size()) + " bytes, bytes up to " +
                 std::to_string(ranges[i].offset + ranges[i].length) +
                 " were asked for (it is shorter than its index says)",
             size());
        return false;
      }
    }
    std::vector<SpeltFilesError> errors(count);
    std::vector<std::function<void()>> tasks;
    tasks.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      tasks.emplace_back([&, i] { ReadRange(ranges[i], &errors[i]); });
    }
    RunRequests(tasks);
    for (const SpeltFilesError& e : errors) {
      if (e.kind != SPELT_FILES_OK) {
        *error = e;
        return false;
      }
    }
    return true;
  }

 private:
  void ReadRange(const SpeltFilesRange& range, SpeltFilesError* error) {
    const Clock::time_point start = Clock::now();
    const auto deadline =
        start + std::chrono::duration<double>(retry_seconds.load(std::memory_order_relaxed));
    // Seeded from the clock and the thread, not std::random_device: the static libstdc++'s
    // random_device calls arc4random (glibc 2.36), beyond the wheel's manylinux_2_28 policy.
    thread_local std::minstd_rand random(static_cast<std::minstd_rand::result_type>(
        Clock::now().time_since_epoch().count() ^
        std::hash<std::thread::id>{}(std::this_thread::get_id())));
    for (int attempt = 0;; ++attempt) {
      CountStart(attempt > 0);
      arrow::Result<int64_t> read = handle_->ReadAt(static_cast<int64_t>(range.offset),
                                                    static_cast<int64_t>(range.length), range.dst);
      counters.in_flight.fetch_sub(1, std::memory_order_relaxed);
      uint64_t got = 0;
      std::string detail;
      if (read.ok()) {
        got = static_cast<uint64_t>(std::max<int64_t>(*read, 0));
        counters.bytes.fetch_add(static_cast<int64_t>(got), std::memory_order_relaxed);
        if (got == range.length) return;
        detail = "read " + std::to_string(got) + " of " + std::to_string(range.length) + " bytes";
      } else if (IsTransient(read.status())) {
        detail = ErrorName(read.status()) + ": " + read.status().message();
      } else {
        if (!Unchanged(range.offset, error)) return;
        Fail(error, SPELT_FILES_IO,
             "cannot read " + Quoted(uri_) + " at byte offset " +
                 std::to_string(range.offset) + ": " + ErrorName(read.status()) + ": " +
                 read.status().message());
        return;
      }
      if (!Unchanged(range.offset + got, error)) return;
      const double delay = std::min(kBackoffFirstS * (1 << std::min(attempt, 10)), kBackoffMaxS) *
                           std::uniform_real_distribution<double>(0.5, 1)(random);
      const auto wait = std::chrono::duration<double>(delay);
      if (Clock::now() + wait > deadline) {
        char took[64];
        std::snprintf(took, sizeof(took), "%.1f",
                      std::chrono::duration<double>(Clock::now() - start).count());
        const std::string message = detail + "; gave up after " + std::to_string(attempt + 1) +
                                    " tries in " + took +
                                    " s (spelt.config.remote_retry_seconds)";
        if (read.ok()) {
          Fail(error, SPELT_FILES_CORRUPT, message + " (the object ends early)",
               range.offset + got);
        } else {
          Fail(error, SPELT_FILES_IO,
               "cannot read " + Quoted(uri_) + " at byte offset " +
                   std::to_string(range.offset) + ": " + message);
        }
        return;
      }
      std::this_thread::sleep_for(wait);
    }
  }

  // Whether the object is still what was opened; else false with *error CORRUPT at `offset`.
  // A failed lookup counts as unchanged (the read's own error tells more).
  bool Unchanged(uint64_t offset, SpeltFilesError* error) const {
    arrow::Result<arrow::fs::FileInfo> now = files_->fs->GetFileInfo(info_.path());
    if (!now.ok()) return true;
    if (now->type() == arrow::fs::FileType::NotFound) {
      Fail(error, SPELT_FILES_CORRUPT, "the object was removed since it was opened", offset);
      return false;
    }
    const auto mtime = [](const arrow::fs::FileInfo& i) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(i.mtime().time_since_epoch())
          .count();
    };
    if (now->size() != info_.size() || mtime(*now) != mtime(info_)) {
      Fail(error, SPELT_FILES_CORRUPT,
           "the object changed since it was opened (was (" + std::to_string(info_.size()) +
               ", " + std::to_string(mtime(info_)) + "), now (" + std::to_string(now->size()) +
               ", " + std::to_string(mtime(*now)) + "))",
           offset);
      return false;
    }
    return true;
  }

  Files* files_;
  std::string uri_;
  arrow::fs::FileInfo info_;
  std::shared_ptr<arrow::io::RandomAccessFile> handle_;  // ReadAt is thread-safe
};

void* OpenRead(void* files_ptr, const char* uri_chars, uint64_t* size, uint64_t* read_ahead,
               SpeltFilesError* error) {
  auto* files = static_cast<Files*>(files_ptr);
  const std::string uri = uri_chars;
  arrow::Result<arrow::fs::FileInfo> info = files->fs->GetFileInfo(PathOn(uri));
  if (!info.ok()) {
    files->FailCall(error, "read", uri, info.status());
    return nullptr;
  }
  if (info->type() == arrow::fs::FileType::NotFound) {
    files->FailNotFound(error, uri);
    return nullptr;
  }
  if (info->type() != arrow::fs::FileType::File) {
    files->FailCall(error, "read", uri, arrow::Status::IOError("not a file"));
    return nullptr;
  }
  // With the FileInfo looked up (its size): no request.
  arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> handle =
      files->fs->OpenInputFile(*info);
  if (!handle.ok()) {
    files->FailCall(error, "read", uri, handle.status());
    return nullptr;
  }
  auto* input = new Input(files, uri, std::move(*info), std::move(*handle));
  *size = input->size();
  *read_ahead = read_ahead_bytes.load(std::memory_order_relaxed);
  return input;
}

int ReadRanges(void* file, const SpeltFilesRange* ranges, size_t count, SpeltFilesError* error) {
  return static_cast<Input*>(file)->Read(ranges, count, error) ? 0 : 1;
}

void CloseRead(void* file) { delete static_cast<Input*>(file); }

struct Output {
  Files* files;
  std::string uri;
  std::shared_ptr<arrow::io::OutputStream> stream;
  ~Output() { Release(files); }
};

void* OpenWrite(void* files_ptr, const char* uri_chars, SpeltFilesError* error) {
  auto* files = static_cast<Files*>(files_ptr);
  const std::string uri = uri_chars;
  auto stream = files->fs->OpenOutputStream(PathOn(uri));
  if (!stream.ok()) {
    files->FailCall(error, "write", uri, stream.status());
    return nullptr;
  }
  Retain(files);
  return new Output{files, uri, std::move(*stream)};
}

int Write(void* file, const char* data, size_t size, SpeltFilesError* error) {
  auto* output = static_cast<Output*>(file);
  const arrow::Status status = output->stream->Write(data, static_cast<int64_t>(size));
  if (status.ok()) return 0;
  output->files->FailCall(error, "write", output->uri, status);
  return 1;
}

// Aborts `output`'s stream (an S3 upload is aborted: no object), or where that fails leaks it:
// Arrow's destructor of a stream that is not closed completes it (CloseFromDestructor), which
// would publish what was written, and waits forever once S3 was finalized (pyarrow's atexit
// hook runs before the writers that the interpreter frees at exit). False if leaked.
bool Abandon(Output& output) {
  if (output.stream->Abort().ok()) return true;
  new std::shared_ptr<arrow::io::OutputStream>(std::move(output.stream));  // never freed
  return false;
}

int CloseWrite(void* file, SpeltFilesError* error) {
  std::unique_ptr<Output> output(static_cast<Output*>(file));
  const arrow::Status status = output->stream->Close();
  if (status.ok()) return 0;
  output->files->FailCall(error, "write", output->uri, status);
  Abandon(*output);
  return 1;
}

void DiscardWrite(void* file) {
  std::unique_ptr<Output> output(static_cast<Output*>(file));
  if (Abandon(*output)) (void)output->files->fs->DeleteFile(PathOn(output->uri));  // any left
}

}  // namespace

void Configure(const RemoteSettings& settings) {
  SetRequestLimit(settings.max_in_flight);
  retry_seconds.store(settings.retry_seconds, std::memory_order_relaxed);
  read_ahead_bytes.store(settings.read_ahead_bytes, std::memory_order_relaxed);
}

RemoteCounters Counters() {
  return {counters.requests.load(), counters.bytes.load(), counters.retries.load(),
          counters.in_flight.load(), counters.peak_in_flight.load()};
}

std::shared_ptr<arrow::fs::FileSystem> WithConnections(std::shared_ptr<arrow::fs::FileSystem> fs,
                                                       int connections) {
#if SPELT_ARROW_S3
  const auto s3 = std::dynamic_pointer_cast<arrow::fs::S3FileSystem>(fs);
  if (s3 == nullptr) return fs;
  // One process-wide executor per capacity asked for, kept to the end (MakeEternal).
  static std::mutex mu;
  static std::vector<std::shared_ptr<arrow::internal::ThreadPool>> executors;
  std::shared_ptr<arrow::internal::ThreadPool> executor;
  {
    std::lock_guard lock(mu);
    for (const auto& e : executors) {
      if (e->GetCapacity() >= connections) executor = e;
    }
    if (executor == nullptr) {
      auto made = arrow::internal::ThreadPool::MakeEternal(connections);
      if (!made.ok()) return fs;
      executor = *made;
      executors.push_back(executor);
    }
  }
  auto copy = arrow::fs::S3FileSystem::Make(s3->options(), arrow::io::IOContext(executor.get()));
  return copy.ok() ? *copy : fs;
#else
  (void)connections;
  return fs;
#endif
}

SpeltNativeFiles* NewArrowFiles(std::shared_ptr<arrow::fs::FileSystem> fs,
                                std::string description) {
  auto* files = new Files;
  files->fs = std::move(fs);
  files->description = std::move(description);
  return new SpeltNativeFiles{SPELT_NATIVE_FILES_VERSION,
                              files,
                              Retain,
                              Release,
                              OpenRead,
                              ReadRanges,
                              CloseRead,
                              OpenWrite,
                              Write,
                              CloseWrite,
                              DiscardWrite};
}

void FreeTable(SpeltNativeFiles* table) {
  Release(table->files);
  delete table;
}

}  // namespace spelt::parquet_native
