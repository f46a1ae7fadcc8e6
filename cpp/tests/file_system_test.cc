// spelt/file_system.h: the local files (pread, batched reads, file:// URIs), URI schemes, and
// the registry, with an in-memory filesystem under the ArrayRecord and TFRecord readers and
// writers.
#include "spelt/file_system.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "spelt/array_record.h"
#include "spelt/errors.h"
#include "spelt/tfrecord.h"

namespace spelt {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "spelt_file_system_" + std::to_string(::getpid()) + "_" + name;
}

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 251);
  return s;
}

std::string WriteLocal(const std::string& name, const std::string& contents) {
  const std::string path = TempPath(name);
  auto file = OpenWritableFile(path);
  file->Write(contents.substr(0, contents.size() / 3));
  file->Write(contents.substr(contents.size() / 3));
  file->Close();
  return path;
}

TEST(LocalFileTest, ReadsAtOffsetsAndThrowsPastTheEnd) {
  const std::string contents = Bytes(10000);
  const std::string path = WriteLocal("read_at", contents);
  auto file = OpenRandomAccessFile(path);
  EXPECT_EQ(file->path(), path);
  ASSERT_EQ(file->size(), contents.size());
  std::string got(100, '\0');
  file->ReadAt(4321, got.data(), got.size());
  EXPECT_EQ(got, contents.substr(4321, 100));
  try {
    file->ReadAt(9950, got.data(), got.size());
    FAIL() << "read past the end";
  } catch (const CorruptFileError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_EQ(e.offset(), 10000u);
  }
}

TEST(LocalFileTest, ReadManyFillsEveryRequestInAnyOrder) {
  const std::string contents = Bytes(1 << 16);
  auto file = OpenRandomAccessFile(WriteLocal("read_many", contents));
  // Contiguous runs (one preadv each), a gap, an empty request, a request behind the others.
  const std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {0, 10}, {10, 4000}, {4010, 1}, {9000, 0}, {9000, 700}, {100, 50}, {65000, 536}};
  std::vector<std::string> out;
  std::vector<ReadRequest> requests;
  for (const auto& [offset, length] : ranges) out.emplace_back(length, '\0');
  for (size_t i = 0; i < ranges.size(); ++i) {
    requests.push_back({ranges[i].first, ranges[i].second, out[i].data()});
  }
  file->ReadMany(requests);
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(out[i], contents.substr(ranges[i].first, ranges[i].second)) << i;
  }
  std::string end(36, '\0'), past_end(100, '\0');
  const ReadRequest past[] = {{65500, 36, end.data()}, {65536, 100, past_end.data()}};
  EXPECT_THROW(file->ReadMany(past), CorruptFileError);
}

TEST(LocalFileTest, FileUrisAreLocalPaths) {
  const std::string contents = Bytes(300);
  const std::string path = WriteLocal("file_uri", contents);
  ASSERT_EQ(path.front(), '/');
  for (const std::string& uri : {"file://" + path, "FILE://localhost" + path}) {
    auto file = OpenRandomAccessFile(uri);
    EXPECT_EQ(file->path(), uri);
    EXPECT_EQ(file->size(), 300u);
  }
  EXPECT_THROW(OpenRandomAccessFile("file://elsewhere" + path), std::invalid_argument);
}

TEST(LocalFileTest, ErrorsNameThePath) {
  const std::string missing = TempPath("no/such/folder/file");
  try {
    OpenRandomAccessFile(missing);
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(OpenWritableFile(missing), std::system_error);
}

TEST(UriSchemeTest, IsTheLowerCaseSchemeOrEmpty) {
  EXPECT_EQ(UriScheme("S3://bucket/key"), "s3");
  EXPECT_EQ(UriScheme("gs://b"), "gs");
  EXPECT_EQ(UriScheme("my+fs.v2-x://b"), "my+fs.v2-x");
  EXPECT_EQ(UriScheme("/data/train@8"), "");
  EXPECT_EQ(UriScheme("data/a:b"), "");
  EXPECT_EQ(UriScheme("1s://b"), "");
  EXPECT_EQ(UriScheme("a b://c"), "");
  EXPECT_EQ(UriScheme("://c"), "");
}

// Files kept in memory by name; reads count their batches.
class MemoryFileSystem final : public FileSystem {
 public:
  struct Store {
    std::mutex mu;
    std::map<std::string, std::string> files;
    int batches = 0;
  };

  std::unique_ptr<RandomAccessFile> OpenForRead(const std::string& uri) const override {
    std::lock_guard<std::mutex> lock(store_->mu);
    const auto it = store_->files.find(uri);
    if (it == store_->files.end()) throw std::runtime_error(uri + ": no such object");
    return std::make_unique<File>(uri, it->second, store_);
  }
  std::unique_ptr<WritableFile> OpenForWrite(const std::string& uri) const override {
    return std::make_unique<Writer>(uri, store_);
  }

  Store& store() const { return *store_; }

 private:
  class File final : public RandomAccessFile {
   public:
    File(std::string uri, std::string bytes, std::shared_ptr<Store> store)
        : uri_(std::move(uri)), bytes_(std::move(bytes)), store_(std::move(store)) {}
    const std::string& path() const override { return uri_; }
    uint64_t size() const override { return bytes_.size(); }
    void ReadAt(uint64_t offset, char* dst, uint64_t n) const override {
      if (offset + n > bytes_.size()) throw CorruptFileError(uri_, bytes_.size(), "ends");
      std::memcpy(dst, bytes_.data() + offset, n);
    }
    void ReadMany(std::span<const ReadRequest> requests) const override {
      {
        std::lock_guard<std::mutex> lock(store_->mu);
        ++store_->batches;
      }
      RandomAccessFile::ReadMany(requests);
    }

   private:
    std::string uri_, bytes_;
    std::shared_ptr<Store> store_;
  };

  class Writer final : public WritableFile {
   public:
    Writer(std::string uri, std::shared_ptr<Store> store)
        : uri_(std::move(uri)), store_(std::move(store)) {}
    const std::string& path() const override { return uri_; }
    void Write(std::string_view bytes) override { bytes_.append(bytes); }
    void Close() override {  // the object appears whole, as in an object store
      std::lock_guard<std::mutex> lock(store_->mu);
      store_->files[uri_] = bytes_;
    }

   private:
    std::string uri_, bytes_;
    std::shared_ptr<Store> store_;
  };

  std::shared_ptr<Store> store_ = std::make_shared<Store>();
};

TEST(FileSystemRegistryTest, AnUnknownSchemeIsNamed) {
  try {
    FileSystemFor("nosuch://bucket/key");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nosuch://bucket/key"), std::string::npos);
  }
  EXPECT_EQ(FileSystemFor("/plain/path"), LocalFileSystem());
  EXPECT_EQ(FileSystemFor("file:///plain/path"), LocalFileSystem());
}

TEST(FileSystemRegistryTest, ReadersAndWritersOpenRegisteredSchemes) {
  auto memory = std::make_shared<MemoryFileSystem>();
  RegisterFileSystem("mem", memory);
  std::vector<std::string> records;
  for (int i = 0; i < 200; ++i) records.push_back(Bytes(static_cast<size_t>(i * 97 % 5000)));
  records.insert(records.begin() + 50, Bytes(600000));  // larger than the TFRecord reader's buffer

  auto writer = ArrayRecordWriter::Open("mem://bucket/a", ArrayRecordWriterOptions::FromString(
                                                              "group_size:4,uncompressed"));
  for (const std::string& r : records) writer->Write(r);
  writer->Close();
  EXPECT_EQ(memory->store().files.count("mem://bucket/a"), 1u);
  auto reader = ArrayRecordReader::Open("mem://bucket/a");
  EXPECT_EQ(reader->path(), "mem://bucket/a");
  ASSERT_EQ(reader->NumRecords(), records.size());
  const std::vector<uint64_t> keys = {200, 3, 4, 100, 0, 50, 57};
  const std::vector<std::string> got = reader->ReadRecords(keys, 2);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(got[i], records[keys[i]]) << keys[i];

  for (const TFRecordCompression c : {TFRecordCompression::kNone, TFRecordCompression::kGzip}) {
    auto tf_writer = TFRecordWriter::Open("mem://bucket/t", c);
    for (const std::string& r : records) tf_writer->Write(r);
    tf_writer->Close();
    EXPECT_EQ(DetectTFRecordCompression("mem://bucket/t"), c);
    auto tf_reader = TFRecordReader::Open("mem://bucket/t");
    size_t n = 0;
    while (const std::optional<uint64_t> length = tf_reader->NextLength()) {
      std::string record(*length, '\0');
      tf_reader->ReadPayload(record.data());  // the large one: past the reader's buffer
      EXPECT_EQ(record, records[n++]);
    }
    EXPECT_EQ(n, records.size());
  }
  // The uncompressed reader read the large payload and the bytes after it as one batch.
  EXPECT_GT(memory->store().batches, 0);

  // A filesystem passed by the caller wins over the registry.
  RegisterFileSystem("mem", nullptr);
  EXPECT_THROW(ArrayRecordReader::Open("mem://bucket/a"), std::invalid_argument);
  EXPECT_EQ(ArrayRecordReader::Open("mem://bucket/a", {}, memory)->NumRecords(), records.size());
}

}  // namespace
}  // namespace spelt
