// spelt/arrow_file_system.h, compiled with libspelt's ABI: the Arrow half
// (arrow_uri_files.h) is reached through C functions only.
#include "spelt/arrow_file_system.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "arrow_uri_files.h"
#include "spelt/native_file_system.h"

namespace spelt {
namespace {

// The fewest connections an S3 client is made with (as spelt._native_files._MIN_CONNECTIONS:
// more where the in-flight limit is higher when the filesystem is made).
constexpr int kMinConnections = 64;
std::atomic<int> max_in_flight{ArrowFilesSettings{}.max_in_flight};

// The filesystems of one scheme, one per authority (bucket, host), each made on first use.
class ArrowSchemeFiles final : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> OpenForRead(const std::string& uri) const override {
    return For(uri)->OpenForRead(uri);
  }
  std::unique_ptr<WritableFile> OpenForWrite(const std::string& uri) const override {
    return For(uri)->OpenForWrite(uri);
  }

 private:
  // "s3://bucket" of "s3://bucket/key".
  static std::string Authority(const std::string& uri) {
    const size_t start = uri.find("://");
    if (start == std::string::npos) return uri;
    return uri.substr(0, uri.find('/', start + 3));
  }

  FileSystemPtr For(const std::string& uri) const {
    const std::string key = Authority(uri);
    std::lock_guard lock(mu_);  // held while made: a filesystem is made once per authority
    FileSystemPtr& fs = made_[key];
    if (fs == nullptr) fs = ArrowFileSystem(key);
    return fs;
  }

  mutable std::mutex mu_;
  mutable std::map<std::string, FileSystemPtr> made_;
};

}  // namespace

void ConfigureArrowFileSystems(const ArrowFilesSettings& settings) {
  max_in_flight.store(std::max(settings.max_in_flight, 1));
  spelt_arrow_files_configure(std::max(settings.max_in_flight, 1), settings.retry_seconds,
                              settings.read_ahead_bytes);
}

FileSystemPtr ArrowFileSystem(const std::string& uri) {
  SpeltFilesError error{};
  const std::unique_ptr<SpeltNativeFiles, decltype(&spelt_arrow_files_free)> table(
      spelt_arrow_files_from_uri(uri.c_str(), std::max(max_in_flight.load(), kMinConnections),
                                 &error),
      &spelt_arrow_files_free);
  if (table == nullptr) throw std::runtime_error(error.message);
  return NativeFileSystem(*table);  // takes its own reference to the files
}

void RegisterArrowFileSystems() {
  const auto fs = std::make_shared<ArrowSchemeFiles>();
  for (const char* scheme : kArrowSchemes) RegisterFileSystem(scheme, fs);
}

}  // namespace spelt
