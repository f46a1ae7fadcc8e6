// The filesystem registry and the default batched read (spelt/file_system.h).
#include "spelt/file_system.h"

#include <cctype>
#include <map>
#include <mutex>
#include <stdexcept>

namespace spelt {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, FileSystemPtr, std::less<>> by_scheme;  // guarded by mu
};

Registry& TheRegistry() {
  static Registry* const registry = [] {
    auto* r = new Registry;
    r->by_scheme[""] = LocalFileSystem();
    r->by_scheme["file"] = LocalFileSystem();
    return r;
  }();
  return *registry;
}

}  // namespace

void RandomAccessFile::ReadMany(std::span<const ReadRequest> requests) const {
  for (const ReadRequest& r : requests) ReadAt(r.offset, r.dst, r.length);
}

std::string UriScheme(std::string_view uri) {
  // RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then "://".
  const size_t colon = uri.find("://");
  if (colon == std::string_view::npos || colon == 0 ||
      !std::isalpha(static_cast<unsigned char>(uri[0]))) {
    return "";
  }
  std::string scheme;
  for (const char c : uri.substr(0, colon)) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '+' && c != '-' && c != '.') return "";
    scheme.push_back(static_cast<char>(std::tolower(u)));
  }
  return scheme;
}

void RegisterFileSystem(const std::string& scheme, FileSystemPtr fs) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  if (fs) {
    registry.by_scheme[scheme] = std::move(fs);
  } else {
    registry.by_scheme.erase(scheme);
  }
}

FileSystemPtr FileSystemFor(const std::string& uri) {
  const std::string scheme = UriScheme(uri);
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  const auto it = registry.by_scheme.find(scheme);
  if (it == registry.by_scheme.end()) {
    throw std::invalid_argument(uri + ": no filesystem is registered for " + scheme +
                                ":// URIs (from Python, any scheme that pyarrow.fs or fsspec "
                                "resolves works; from C++, RegisterFileSystem one)");
  }
  return it->second;
}

std::unique_ptr<RandomAccessFile> OpenRandomAccessFile(const std::string& uri,
                                                       const FileSystemPtr& fs) {
  return (fs ? fs : FileSystemFor(uri))->OpenForRead(uri);
}

std::unique_ptr<WritableFile> OpenWritableFile(const std::string& uri, const FileSystemPtr& fs) {
  return (fs ? fs : FileSystemFor(uri))->OpenForWrite(uri);
}

}  // namespace spelt
