// spelt/native_file_system.h: a FileSystem over a C table of remote files
// (spelt/native_files_abi.h), here a fake one over bytes in memory: batched reads (one call to
// the table per batch, bytes exact for repeated, overlapping and neighbouring requests), the
// errors the table reports, writes, and the table's reference count.
#include "spelt/native_file_system.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "spelt/errors.h"

namespace spelt {
namespace {

// The fake store: objects by URI, and what the table was asked.
struct Store {
  int refs = 1;
  std::map<std::string, std::string> objects;
  int read_calls = 0;
  int discarded = 0;
};

struct Output {
  Store* store;
  std::string uri, bytes;
};

void SetError(SpeltFilesError* error, int kind, const std::string& message, uint64_t offset) {
  error->kind = kind;
  error->offset = offset;
  std::snprintf(error->message, sizeof(error->message), "%s", message.c_str());
}

SpeltNativeFiles FakeTable(Store* store) {
  SpeltNativeFiles table{};
  table.version = SPELT_NATIVE_FILES_VERSION;
  table.files = store;
  table.retain = [](void* files) { ++static_cast<Store*>(files)->refs; };
  table.release = [](void* files) { --static_cast<Store*>(files)->refs; };
  table.open_read = [](void* files, const char* uri, uint64_t* size, uint64_t* read_ahead,
                       SpeltFilesError* error) -> void* {
    auto* store = static_cast<Store*>(files);
    const auto it = store->objects.find(uri);
    if (it == store->objects.end()) {
      SetError(error, SPELT_FILES_NOT_FOUND, std::string("no such file: ") + uri, 0);
      return nullptr;
    }
    *size = it->second.size();
    *read_ahead = 1 << 20;
    return new std::pair<Store*, const std::string*>(store, &it->second);
  };
  table.read_ranges = [](void* file, const SpeltFilesRange* ranges, size_t count,
                         SpeltFilesError* error) {
    auto& [store, bytes] = *static_cast<std::pair<Store*, const std::string*>*>(file);
    ++store->read_calls;
    for (size_t i = 0; i < count; ++i) {
      if (ranges[i].offset + ranges[i].length > bytes->size()) {
        SetError(error, SPELT_FILES_CORRUPT, "the object ends early", bytes->size());
        return 1;
      }
      std::memcpy(ranges[i].dst, bytes->data() + ranges[i].offset, ranges[i].length);
    }
    return 0;
  };
  table.close_read = [](void* file) {
    delete static_cast<std::pair<Store*, const std::string*>*>(file);
  };
  table.open_write = [](void* files, const char* uri, SpeltFilesError* error) -> void* {
    if (std::strstr(uri, "denied") != nullptr) {
      SetError(error, SPELT_FILES_IO, std::string("cannot write ") + uri + ": AccessDenied", 0);
      return nullptr;
    }
    return new Output{static_cast<Store*>(files), uri, ""};
  };
  table.write = [](void* file, const char* data, size_t size, SpeltFilesError*) {
    static_cast<Output*>(file)->bytes.append(data, size);
    return 0;
  };
  table.close_write = [](void* file, SpeltFilesError*) {
    std::unique_ptr<Output> out(static_cast<Output*>(file));
    out->store->objects[out->uri] = out->bytes;
    return 0;
  };
  table.discard_write = [](void* file) {
    std::unique_ptr<Output> out(static_cast<Output*>(file));
    ++out->store->discarded;
  };
  return table;
}

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 + i / 251);
  return s;
}

TEST(NativeFileSystemTest, ReadsABatchWithOneCallAndExactBytes) {
  Store store;
  const std::string data = Pattern(3 << 20);
  store.objects["s3://b/k"] = data;
  const FileSystemPtr fs = NativeFileSystem(FakeTable(&store));
  const auto file = fs->OpenForRead("s3://b/k");
  EXPECT_EQ(file->size(), data.size());
  EXPECT_TRUE(file->HighLatency());
  EXPECT_EQ(file->ReadAheadBytes(), uint64_t{1} << 20);

  // Far apart, neighbours, a repeat, one inside another, one split into several ranges.
  const std::vector<std::pair<uint64_t, uint64_t>> wanted = {
      {0, 100}, {100, 50}, {2 << 20, 10}, {0, 100}, {20, 30}, {500000, (3 << 20) - 500000}};
  std::vector<std::string> got(wanted.size());
  std::vector<ReadRequest> requests;
  for (size_t i = 0; i < wanted.size(); ++i) {
    got[i].resize(wanted[i].second);
    requests.push_back({wanted[i].first, wanted[i].second, got[i].data()});
  }
  file->ReadMany(requests);
  EXPECT_EQ(store.read_calls, 1);
  for (size_t i = 0; i < wanted.size(); ++i) {
    EXPECT_EQ(got[i], data.substr(wanted[i].first, wanted[i].second)) << i;
  }
}

TEST(NativeFileSystemTest, ReportsTheTablesErrorsNamingTheUri) {
  Store store;
  store.objects["s3://b/short"] = "abc";
  const FileSystemPtr fs = NativeFileSystem(FakeTable(&store));
  try {
    fs->OpenForRead("s3://b/missing");
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_STREQ(e.what(), "no such file: s3://b/missing");
  }
  const auto file = fs->OpenForRead("s3://b/short");
  char buffer[8];
  try {
    file->ReadAt(0, buffer, 3);  // the fake checks the object's bytes, not the size at open
    store.objects["s3://b/short"] = "a";
    file->ReadAt(0, buffer, 3);
    FAIL() << "no error";
  } catch (const CorruptFileError& e) {
    EXPECT_NE(std::string(e.what()).find("s3://b/short"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the object ends early"), std::string::npos);
  }
  try {
    fs->OpenForWrite("s3://b/denied");
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EIO);
    EXPECT_STREQ(e.what(), "cannot write s3://b/denied: AccessDenied");
  }
}

TEST(NativeFileSystemTest, WritesOnCloseAndDiscardsAnUnclosedFile) {
  Store store;
  const FileSystemPtr fs = NativeFileSystem(FakeTable(&store));
  auto out = fs->OpenForWrite("s3://b/new");
  out->Write("hello ");
  out->Write("world");
  out->Close();
  EXPECT_EQ(store.objects.at("s3://b/new"), "hello world");
  EXPECT_THROW(out->Write("more"), std::logic_error);
  fs->OpenForWrite("s3://b/abandoned")->Write("x");  // destroyed unclosed
  EXPECT_EQ(store.discarded, 1);
  EXPECT_EQ(store.objects.count("s3://b/abandoned"), 0u);
}

TEST(NativeFileSystemTest, HoldsItsOwnReferenceUntilTheLastFileIsGone) {
  Store store;
  FileSystemPtr fs = NativeFileSystem(FakeTable(&store));
  EXPECT_EQ(store.refs, 2);  // the caller's and the FileSystem's
  store.objects["s3://b/k"] = "abc";
  auto file = fs->OpenForRead("s3://b/k");
  fs.reset();
  EXPECT_EQ(store.refs, 2);  // the open file keeps the FileSystem's
  file.reset();
  EXPECT_EQ(store.refs, 1);
}

TEST(NativeFileSystemTest, RejectsAnotherTableVersion) {
  Store store;
  SpeltNativeFiles table = FakeTable(&store);
  table.version = SPELT_NATIVE_FILES_VERSION + 1;
  EXPECT_THROW(NativeFileSystem(table), std::invalid_argument);
  EXPECT_EQ(store.refs, 1);
}

}  // namespace
}  // namespace spelt
