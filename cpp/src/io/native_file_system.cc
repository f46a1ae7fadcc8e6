#include "spelt/native_file_system.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "spelt/blocking_wait.h"
#include "spelt/errors.h"
#include "spelt/range_reads.h"
#include "spelt/remote_file.h"

namespace spelt {
namespace {

// A std::system_error whose what() is exactly `message` (std::system_error's own appends the
// errno's text); the Python module's bind_errors.cc makes it OSError(errno, what()), so ENOENT
// is FileNotFoundError.
class RemoteError final : public std::system_error {
 public:
  RemoteError(int code, std::string message)
      : std::system_error(code, std::generic_category()), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// fn() through BlockingWait: the request waits on the network, and what the embedder's hook
// drops for the wait (the Python module's GIL, where a binding opens or writes a file) may be
// needed by a server in this process (an emulator).
template <typename F>
auto Waiting(F&& fn) {
  decltype(fn()) result{};
  BlockingWait([&] { result = fn(); });
  return result;
}

[[noreturn]] void Throw(const std::string& uri, const SpeltFilesError& error) {
  switch (error.kind) {
    case SPELT_FILES_NOT_FOUND:
      throw RemoteError(ENOENT, error.message);
    case SPELT_FILES_CORRUPT:
      throw CorruptFileError(uri, error.offset, error.message, "remote");
    default:
      throw RemoteError(EIO, error.message);
  }
}

// The table and one reference to its filesystem.
class Table {
 public:
  explicit Table(const SpeltNativeFiles& table) : table_(table) { table_.retain(table_.files); }
  ~Table() { table_.release(table_.files); }
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  const SpeltNativeFiles* operator->() const { return &table_; }

 private:
  SpeltNativeFiles table_;
};

class NativeRandomAccessFile final : public RemoteFile {
 public:
  NativeRandomAccessFile(std::shared_ptr<const Table> table, std::string uri)
      : RemoteFile(std::move(uri)), table_(std::move(table)) {
    SpeltFilesError error{};
    file_ = Waiting([&] {
      return (*table_)->open_read((*table_)->files, path_.c_str(), &size_, &read_ahead_, &error);
    });
    if (file_ == nullptr) Throw(path_, error);
  }
  ~NativeRandomAccessFile() override { (*table_)->close_read(file_); }

  // The ranges of PlanRanges (spelt/range_reads.h), all sent at once. A range that lies within
  // one request's bytes (a record, or a piece of a large read split into ranges) is read in
  // place, into that request's destination; the others into one staging buffer (not
  // zero-filled), copied out after, as are requests not read whole in place.
  void ReadMany(std::span<const ReadRequest> requests) const override {
    const std::vector<ByteRange> ranges = PlanRanges(requests);
    if (ranges.empty()) return;
    std::vector<const ReadRequest*> sorted;  // by offset, then the longest first
    sorted.reserve(requests.size());
    for (const ReadRequest& r : requests) sorted.push_back(&r);
    std::ranges::sort(sorted, [](const ReadRequest* a, const ReadRequest* b) {
      return a->offset != b->offset ? a->offset < b->offset : a->length > b->length;
    });
    // The request holding each range whole, or null; and the bytes read in place per request.
    std::vector<const ReadRequest*> holder(ranges.size(), nullptr);
    std::unordered_map<const ReadRequest*, uint64_t> in_place;
    uint64_t staged = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
      const ByteRange& range = ranges[i];
      auto it = std::ranges::upper_bound(sorted, range.offset, {},
                                         [](const ReadRequest* r) { return r->offset; });
      // Tried: the longest of the requests that start last at or before the range.
      if (it != sorted.begin()) {
        const uint64_t start = (*std::prev(it))->offset;
        while (it != sorted.begin() && (*std::prev(it))->offset == start) --it;
        if (range.offset + range.length <= (*it)->offset + (*it)->length) holder[i] = *it;
      }
      if (holder[i] != nullptr) in_place[holder[i]] += range.length;
    }
    for (size_t i = 0; i < ranges.size(); ++i) {  // a request is read in place whole or not
      if (holder[i] != nullptr && in_place[holder[i]] != holder[i]->length) holder[i] = nullptr;
      if (holder[i] == nullptr) staged += ranges[i].length;
    }
    std::unique_ptr<char[]> staging(staged > 0 ? new char[staged] : nullptr);
    std::vector<SpeltFilesRange> wanted(ranges.size());
    std::vector<const char*> parts(ranges.size());
    uint64_t at = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
      char* dst = holder[i] != nullptr ? holder[i]->dst + (ranges[i].offset - holder[i]->offset)
                                       : staging.get() + at;
      if (holder[i] == nullptr) at += ranges[i].length;
      wanted[i] = {ranges[i].offset, ranges[i].length, dst};
      parts[i] = dst;
    }
    SpeltFilesError error{};
    if (Waiting([&] {
          return (*table_)->read_ranges(file_, wanted.data(), wanted.size(), &error);
        }) != 0) {
      Throw(path_, error);
    }
    // The requests not read whole in place (copying one onto itself would be UB).
    std::vector<ReadRequest> rest;
    for (const ReadRequest& r : requests) {
      const auto it = in_place.find(&r);
      if (r.length > 0 && (it == in_place.end() || it->second != r.length)) rest.push_back(r);
    }
    if (!rest.empty()) CopyFromRanges(rest, ranges, parts);
  }

 private:
  std::shared_ptr<const Table> table_;
  void* file_ = nullptr;
};

class NativeWritableFile final : public WritableFile {
 public:
  NativeWritableFile(std::shared_ptr<const Table> table, std::string uri)
      : table_(std::move(table)), path_(std::move(uri)) {
    SpeltFilesError error{};
    file_ = Waiting([&] { return (*table_)->open_write((*table_)->files, path_.c_str(), &error); });
    if (file_ == nullptr) Throw(path_, error);
  }
  ~NativeWritableFile() override {
    if (file_ != nullptr) BlockingWait([&] { (*table_)->discard_write(file_); });
  }

  const std::string& path() const override { return path_; }

  void Write(std::string_view bytes) override {
    if (file_ == nullptr) throw std::logic_error(path_ + ": write after close");
    SpeltFilesError error{};
    if (Waiting([&] {
          return (*table_)->write(file_, bytes.data(), bytes.size(), &error);
        }) != 0) {
      Throw(path_, error);
    }
  }

  void Close() override {
    if (file_ == nullptr) return;
    SpeltFilesError error{};
    void* file = std::exchange(file_, nullptr);
    if (Waiting([&] { return (*table_)->close_write(file, &error); }) != 0) Throw(path_, error);
  }

 private:
  std::shared_ptr<const Table> table_;
  std::string path_;
  void* file_ = nullptr;
};

class NativeFiles final : public FileSystem {
 public:
  explicit NativeFiles(const SpeltNativeFiles& table)
      : table_(std::make_shared<const Table>(table)) {}

  std::unique_ptr<RandomAccessFile> OpenForRead(const std::string& uri) const override {
    return std::make_unique<NativeRandomAccessFile>(table_, uri);
  }
  std::unique_ptr<WritableFile> OpenForWrite(const std::string& uri) const override {
    return std::make_unique<NativeWritableFile>(table_, uri);
  }

 private:
  std::shared_ptr<const Table> table_;
};

}  // namespace

FileSystemPtr NativeFileSystem(const SpeltNativeFiles& table) {
  if (table.version != SPELT_NATIVE_FILES_VERSION) {
    throw std::invalid_argument("native files of version " + std::to_string(table.version) +
                                ", not " + std::to_string(SPELT_NATIVE_FILES_VERSION));
  }
  return std::make_shared<NativeFiles>(table);
}

}  // namespace spelt
