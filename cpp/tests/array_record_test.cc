// Tests for spelt/array_record.h: round trips for every codec and group size, parallel and
// cached reads, writer options, and corrupt input (truncation, bit flips, wrong magic, files
// that are not ArrayRecord files), which must give a CorruptFileError naming the file and
// offset, never wrong bytes.
#include "spelt/array_record.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "array_record/chunk_cache.h"
#include "io/append_file.h"
#include "array_record/layout.h"
#include "array_record/read_plan.h"
#include "riegeli/chunk_writer.h"
#include "riegeli/simple_chunk.h"
#include "spelt/file_system.h"

namespace spelt {
namespace {

constexpr uint64_t kBlock = 65536;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "spelt_array_record_" + std::to_string(::getpid()) + "_" + name;
}

// EXPECT that `text` contains `part`.
#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// Deterministic, mildly compressible bytes.
std::string MakeRecord(uint64_t seed, size_t size) {
  std::string record(size, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15u + 1;
  for (char& c : record) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>('a' + x % 16);
  }
  return record;
}

std::vector<std::string> MakeRecords(const std::vector<size_t>& sizes) {
  std::vector<std::string> records;
  for (size_t i = 0; i < sizes.size(); ++i) records.push_back(MakeRecord(i, sizes[i]));
  return records;
}

void WriteFile(const std::string& path, const std::vector<std::string>& records,
               const ArrayRecordWriterOptions& options) {
  auto writer = ArrayRecordWriter::Open(path, options);
  for (const std::string& r : records) writer->Write(r);
  EXPECT_EQ(writer->NumRecords(), records.size());
  writer->Close();
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Flips bit `bit` of the byte at `offset` of the file at `path` in place.
void FlipBit(const std::string& path, uint64_t offset, int bit) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekg(static_cast<std::streamoff>(offset));
  const char byte = static_cast<char>(file.get() ^ (1 << bit));
  file.seekp(static_cast<std::streamoff>(offset));
  file.put(byte);
}

std::vector<std::string> ReadAll(const ArrayRecordReader& reader) {
  std::vector<std::string> records;
  for (uint64_t i = 0; i < reader.NumRecords(); ++i) records.push_back(reader.ReadRecord(i));
  return records;
}

// Opening `path` and reading every record (one by one, and batched) either gives exactly
// `expected` or throws a CorruptFileError that names the file and an offset. Returns whether it
// threw.
bool ExpectCorruptOrCorrect(const std::string& path, const std::vector<std::string>& expected,
                            const std::string& context) {
  try {
    ArrayRecordReaderOptions options;
    options.cache_chunks = 0;  // both ways read the file
    const auto reader = ArrayRecordReader::Open(path, options);
    EXPECT_EQ(reader->NumRecords(), expected.size()) << context;
    if (reader->NumRecords() != expected.size()) return false;
    std::vector<uint64_t> all(expected.size());
    std::iota(all.begin(), all.end(), uint64_t{0});
    EXPECT_EQ(reader->ReadRecords(all, 1), expected) << context;
    for (uint64_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(reader->ReadRecord(i), expected[i]) << context << ", record " << i;
    }
  } catch (const CorruptFileError& e) {
    EXPECT_EQ(e.path(), path) << context;
    EXPECT_CONTAINS(e.what(), path + ": corrupt ArrayRecord file at byte offset") << context;
    return true;
  }
  return false;
}

template <typename Error, typename Fn>
Error Catch(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an exception";
  throw std::logic_error("no exception");
}

// ---------------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------------

struct RoundTripCase {
  std::string options;
  std::string compression;  // as Info() reports it
};

class ArrayRecordRoundTripTest : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(ArrayRecordRoundTripTest, EveryRecordReadsBack) {
  const ArrayRecordWriterOptions options = ArrayRecordWriterOptions::FromString(GetParam().options);
  // From empty records to one of ~3 MiB, crossing many 64 KiB blocks.
  const std::vector<std::string> records = MakeRecords(
      {0, 1, 5, 100, 0, 1000, 65536, 70000, 3 * 1024 * 1024 + 7, 12, 0, 300, 131000, 2, 9});
  const std::string path = TempPath("round_trip");
  WriteFile(path, records, options);
  ASSERT_EQ(std::filesystem::file_size(path) % kBlock, 0u);

  const auto reader = ArrayRecordReader::Open(path);
  const uint64_t group = std::min<uint64_t>(options.group_size, records.size());
  EXPECT_EQ(reader->NumRecords(), records.size());
  EXPECT_EQ(reader->GroupSize(), group);
  EXPECT_EQ(reader->NumChunks(), (records.size() + group - 1) / group);
  EXPECT_EQ(ReadAll(*reader), records);

  const ArrayRecordInfo info = reader->Info();
  EXPECT_EQ(info.path, path);
  EXPECT_EQ(info.file_size, std::filesystem::file_size(path));
  EXPECT_EQ(info.num_records, records.size());
  EXPECT_EQ(info.num_chunks, reader->NumChunks());
  EXPECT_EQ(info.group_size, group);
  EXPECT_EQ(info.compression, GetParam().compression);
  EXPECT_EQ(info.writer_options, options.ToString());
  uint64_t total = 0;
  for (const std::string& r : records) total += r.size();
  EXPECT_EQ(info.decoded_bytes, total);
  EXPECT_LT(info.footer_offset, info.file_size);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(
    CodecsAndGroups, ArrayRecordRoundTripTest,
    ::testing::Values(RoundTripCase{"group_size:1,uncompressed", "uncompressed"},
                      RoundTripCase{"group_size:3,uncompressed", "uncompressed"},
                      RoundTripCase{"group_size:65536,uncompressed", "uncompressed"},
                      RoundTripCase{"group_size:1,zstd", "zstd"},
                      RoundTripCase{"group_size:3,zstd:1", "zstd"},
                      RoundTripCase{"group_size:65536,zstd:3,window_log:24", "zstd"},
                      RoundTripCase{"group_size:1,brotli:1", "brotli"},
                      RoundTripCase{"group_size:3,brotli:5", "brotli"},
                      RoundTripCase{"group_size:65536,brotli:4,window_log:26", "brotli"},
                      RoundTripCase{"group_size:1,snappy", "snappy"},
                      RoundTripCase{"group_size:3,snappy", "snappy"},
                      RoundTripCase{"group_size:65536,snappy", "snappy"},
                      RoundTripCase{"group_size:2,zstd,pad_to_block_boundary", "zstd"}),
    [](const auto& info) {
      std::string name = info.param.options;
      std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
      return name;
    });

TEST(ArrayRecordTest, EmptyFile) {
  const std::string path = TempPath("no_records");
  WriteFile(path, {}, {});
  EXPECT_EQ(std::filesystem::file_size(path), 2 * kBlock);
  const auto reader = ArrayRecordReader::Open(path);
  EXPECT_EQ(reader->NumRecords(), 0u);
  EXPECT_EQ(reader->NumChunks(), 0u);
  EXPECT_EQ(reader->GroupSize(), 0u);
  EXPECT_TRUE(reader->ReadRecords({}, 4).empty());
  EXPECT_THROW(reader->ReadRecord(0), std::out_of_range);
  EXPECT_EQ(reader->Info().compression, "");
  std::filesystem::remove(path);
}

TEST(ArrayRecordTest, OneRecord) {
  const std::string path = TempPath("one_record");
  WriteFile(path, {"only"}, ArrayRecordWriterOptions::FromString("group_size:65536"));
  const auto reader = ArrayRecordReader::Open(path);
  EXPECT_EQ(reader->NumRecords(), 1u);
  EXPECT_EQ(reader->GroupSize(), 1u);  // the footer's first chunk, as upstream reads it
  EXPECT_EQ(reader->ReadRecord(0), "only");
  std::filesystem::remove(path);
}

TEST(ArrayRecordTest, HundredThousandTinyRecords) {
  std::vector<std::string> records;
  for (int i = 0; i < 100000; ++i) records.push_back(std::to_string(i % 1000));
  std::vector<uint64_t> all(records.size());
  for (uint64_t i = 0; i < all.size(); ++i) all[i] = i;
  for (const char* options : {"group_size:1,uncompressed", "group_size:65536,zstd"}) {
    const std::string path = TempPath("many");
    WriteFile(path, records, ArrayRecordWriterOptions::FromString(options));
    const auto reader = ArrayRecordReader::Open(path);
    EXPECT_EQ(reader->NumRecords(), records.size()) << options;
    EXPECT_EQ(reader->ReadRecords(all, 4), records) << options;
    EXPECT_EQ(reader->ReadRecord(99999), "999") << options;
    std::filesystem::remove(path);
  }
}

TEST(ArrayRecordTest, ManyRecordsInLittleDataArePaddedToOneBytePerRecord) {
  // 65536 one-byte records compress to a few bytes, but the chunk must span >= 65536 bytes.
  const std::vector<std::string> records(70000, "x");
  const std::string path = TempPath("padded");
  WriteFile(path, records, ArrayRecordWriterOptions::FromString("group_size:65536,zstd"));
  EXPECT_GE(std::filesystem::file_size(path), 70000u);
  const auto reader = ArrayRecordReader::Open(path);
  EXPECT_EQ(reader->NumChunks(), 2u);
  EXPECT_EQ(reader->ReadRecord(65535), "x");
  EXPECT_EQ(reader->ReadRecord(69999), "x");
  std::filesystem::remove(path);
}

// ---------------------------------------------------------------------------------------------
// Parallel reads and the chunk cache
// ---------------------------------------------------------------------------------------------

TEST(ArrayRecordTest, ParallelReadRecordsEqualsSequentialReads) {
  std::vector<size_t> sizes;
  for (size_t i = 0; i < 2000; ++i) sizes.push_back(i % 7 == 0 ? 0 : (i * 37) % 5000);
  const std::vector<std::string> records = MakeRecords(sizes);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> indices(5000);
  for (uint64_t& i : indices) i = rng() % records.size();  // random, with repeats
  for (const char* options : {"group_size:1", "group_size:16,snappy", "group_size:500,brotli:1"}) {
    const std::string path = TempPath("parallel");
    WriteFile(path, records, ArrayRecordWriterOptions::FromString(options));
    const auto reader = ArrayRecordReader::Open(path);
    std::vector<std::string> expected;
    for (uint64_t i : indices) expected.push_back(records[i]);
    for (int threads : {1, 2, 8}) {
      EXPECT_EQ(reader->ReadRecords(indices, threads), expected) << options << " " << threads;
    }
    // Concurrent callers share the pool and the cache.
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t) {
      callers.emplace_back([&] { EXPECT_EQ(reader->ReadRecords(indices, 3), expected); });
    }
    for (std::thread& t : callers) t.join();
    std::filesystem::remove(path);
  }
}

// ForEachRecord visits [begin, end) in order with the bytes ReadRecord gives, in any layout
// and with helper threads reading runs (of 1 MiB) ahead; a call from inside the visitor works;
// a bad chunk throws after the records before it, and so does the visitor's own error.
TEST(ArrayRecordTest, ForEachRecordVisitsRangesInOrder) {
  constexpr uint64_t kNum = 2500;  // ~3.7 MB: several runs
  std::vector<size_t> sizes;
  for (size_t i = 0; i < kNum; ++i) sizes.push_back(i % 11 == 0 ? 0 : (i * 53) % 3000);
  const std::vector<std::string> records = MakeRecords(sizes);
  for (const char* options : {"group_size:1,uncompressed", "group_size:7,zstd",
                              "group_size:64,uncompressed", "group_size:1000,snappy"}) {
    const std::string path = TempPath("for_each");
    WriteFile(path, records, ArrayRecordWriterOptions::FromString(options));
    const auto reader = ArrayRecordReader::Open(path);
    for (const int num_threads : {1, 2, 5}) {
      for (const auto& [begin, end] : std::vector<std::pair<uint64_t, uint64_t>>{
               {0, kNum}, {3, 4}, {5, 2400}, {kNum - 1, kNum}, {10, 10}, {kNum, kNum}}) {
        uint64_t next = begin;
        reader->ForEachRecord(
            begin, end,
            [&](uint64_t index, std::string_view record) {
              ASSERT_EQ(index, next) << options;
              ASSERT_EQ(record, records[index]) << options << " " << index;
              ++next;
            },
            num_threads);
        EXPECT_EQ(next, end) << options << " [" << begin << ", " << end << ") " << num_threads;
      }
      EXPECT_THROW(
          reader->ForEachRecord(0, kNum + 1, [](uint64_t, std::string_view) {}, num_threads),
          std::out_of_range);
      EXPECT_THROW(reader->ForEachRecord(5, 4, [](uint64_t, std::string_view) {}, num_threads),
                   std::out_of_range);
      // Re-entered from the visitor: the inner call has its own buffers.
      std::vector<std::string> outer;
      reader->ForEachRecord(
          100, 110,
          [&](uint64_t index, std::string_view record) {
            reader->ForEachRecord(0, 2000, [](uint64_t, std::string_view) {}, num_threads);
            outer.emplace_back(record);
            EXPECT_EQ(outer.back(), records[index]);
          },
          num_threads);
      EXPECT_EQ(outer.size(), 10u);
      // The visitor's error ends the call.
      uint64_t visited = 0;
      EXPECT_THROW(reader->ForEachRecord(
                       0, kNum,
                       [&](uint64_t index, std::string_view) {
                         if (index == 1500) throw std::runtime_error("stop");
                         ++visited;
                       },
                       num_threads),
                   std::runtime_error);
      EXPECT_EQ(visited, 1500u);
    }
    std::filesystem::remove(path);
  }
  // A corrupt chunk in a later run: the records before it are visited, then CorruptFileError.
  const std::string path = TempPath("for_each_corrupt");
  WriteFile(path, records, ArrayRecordWriterOptions::FromString("group_size:1,uncompressed"));
  const auto record_2000 = ReadBytes(path).find(records[2000].substr(0, 64));
  ASSERT_NE(record_2000, std::string::npos);
  FlipBit(path, record_2000 + 5, 3);
  for (const int num_threads : {1, 2, 5}) {
    uint64_t visited = 0;
    EXPECT_THROW(ArrayRecordReader::Open(path)->ForEachRecord(
                     0, kNum, [&](uint64_t, std::string_view) { ++visited; }, num_threads),
                 CorruptFileError);
    EXPECT_EQ(visited, 2000u) << num_threads;
  }
  std::filesystem::remove(path);
}

TEST(ArrayRecordChunkCacheTest, EvictsLeastRecentlyUsed) {
  using internal::array_record::ChunkCache;
  ChunkCache cache(2);
  const auto chunk = [] {
    return std::make_shared<const internal::riegeli::DecodedChunk>(
        internal::Buffer(), std::string_view(), std::vector<uint64_t>());
  };
  const ChunkCache::ChunkPtr a = chunk(), b = chunk(), c = chunk();
  cache.Insert(1, a);
  cache.Insert(2, b);
  EXPECT_EQ(cache.Find(1), a);  // 1 is now the most recent
  cache.Insert(3, c);           // evicts 2
  EXPECT_EQ(cache.Find(2), nullptr);
  EXPECT_EQ(cache.Find(1), a);
  EXPECT_EQ(cache.Find(3), c);
  cache.Insert(3, a);  // replaces
  EXPECT_EQ(cache.Find(3), a);
  ChunkCache disabled(0);
  disabled.Insert(1, a);
  EXPECT_EQ(disabled.Find(1), nullptr);
}

TEST(ArrayRecordReadPlanTest, GroupsByChunkAndRunsOfNeighbouringChunks) {
  using internal::array_record::PlanReads;
  using internal::array_record::ReadPlan;
  // Chunks of 2 records, 100 bytes each; a run may span 300 bytes; chunk 6 is cached.
  const std::vector<uint64_t> offsets = {64, 164, 264, 364, 464, 564, 664, 764, 864, 964};
  const std::vector<uint64_t> indices = {9, 0, 1, 3, 2, 7, 10, 12, 14, 13, 4, 17, 0};
  const ReadPlan plan =
      PlanReads(indices, 2, offsets, 300, [](uint64_t c, size_t) { return c == 6; });
  std::vector<uint64_t> sorted;
  for (size_t position : plan.order) sorted.push_back(indices[position]);
  EXPECT_EQ(sorted, (std::vector<uint64_t>{0, 0, 1, 2, 3, 4, 7, 9, 10, 12, 13, 14, 17}));
  std::vector<uint64_t> chunks;
  for (const ReadPlan::Group& group : plan.groups) {
    chunks.push_back(group.chunk);
    for (size_t i = group.begin; i < group.end; ++i) {
      EXPECT_EQ(indices[plan.order[i]] / 2, group.chunk);
    }
  }
  EXPECT_EQ(chunks, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  std::vector<std::pair<size_t, size_t>> runs;
  for (const ReadPlan::Run& run : plan.runs) runs.emplace_back(run.begin, run.end);
  // Chunks 0-2 (300 bytes), 3-5, then 6 alone (cached), then 7-8.
  EXPECT_EQ(runs, (std::vector<std::pair<size_t, size_t>>{{0, 3}, {3, 6}, {6, 7}, {7, 9}}));
  EXPECT_TRUE(
      PlanReads({}, 2, offsets, 300, [](uint64_t, size_t) { return false; }).runs.empty());
}

TEST(ArrayRecordTest, CachedChunkIsNotReadAgain) {
  const std::vector<std::string> records = MakeRecords({10, 20, 30, 40, 50, 60});
  const std::string path = TempPath("cache");
  WriteFile(path, records, ArrayRecordWriterOptions::FromString("group_size:3,zstd"));
  for (size_t capacity : {0, 1}) {
    ArrayRecordReaderOptions options;
    options.cache_chunks = capacity;
    const auto reader = ArrayRecordReader::Open(path, options);
    EXPECT_EQ(reader->ReadRecord(0), records[0]);
    // Corrupt chunk 0 on disk: only a read that bypasses the cache notices.
    std::string bytes = ReadBytes(path);
    const std::string original = bytes;
    bytes[64 + 40 + 10] ^= 1;
    WriteBytes(path, bytes);
    if (capacity == 0) {
      EXPECT_THROW(reader->ReadRecord(1), CorruptFileError);
    } else {
      EXPECT_EQ(reader->ReadRecord(1), records[1]);
      EXPECT_EQ(reader->ReadRecords(std::vector<uint64_t>{2, 0}, 1),
                (std::vector<std::string>{records[2], records[0]}));
    }
    WriteBytes(path, original);
  }
  std::filesystem::remove(path);
}

// 40 records of 0 or 30-70 KB (so that records cross block headers) in chunks of 4,
// uncompressed, written to a temporary file; the records in a shuffled order.
struct InPlaceFile {
  std::vector<std::string> records;
  std::string path;
  std::vector<uint64_t> order;
  std::vector<std::string> expected;  // records[order[k]]
};
InPlaceFile WriteInPlaceFile(const std::string& name, uint64_t seed) {
  InPlaceFile f;
  std::vector<size_t> sizes;
  for (size_t i = 0; i < 40; ++i) sizes.push_back(i % 9 == 0 ? 0 : 30000 + i * 977);
  f.records = MakeRecords(sizes);
  f.path = TempPath(name);
  WriteFile(f.path, f.records, ArrayRecordWriterOptions::FromString("group_size:4,uncompressed"));
  f.order.resize(f.records.size());
  std::iota(f.order.begin(), f.order.end(), uint64_t{0});
  std::shuffle(f.order.begin(), f.order.end(), std::mt19937_64(seed));
  for (uint64_t i : f.order) f.expected.push_back(f.records[i]);
  return f;
}

// Once a reader has read an uncompressed chunk of several records whole and checked it, it
// reads single records of that chunk in place: just their bytes, across block headers.
TEST(ArrayRecordTest, CheckedUncompressedChunkIsReadInPlace) {
  const auto [records, path, order, expected] = WriteInPlaceFile("in_place", 3);
  ArrayRecordReaderOptions options;
  options.cache_chunks = 0;
  const auto reader = ArrayRecordReader::Open(path, options);
  for (int pass = 0; pass < 2; ++pass) {  // the second pass reads every record in place
    for (size_t k = 0; k < order.size(); ++k) {
      ASSERT_EQ(reader->ReadRecord(order[k]), expected[k]) << "pass " << pass << " " << order[k];
    }
    for (int threads : {1, 2}) EXPECT_EQ(reader->ReadRecords(order, threads), expected);
  }
  // Corrupt record 6 (chunk 1): a new reader checks the chunk and fails on record 5, while
  // the first reads record 5 in place without touching record 6.
  const auto record_6 = ReadBytes(path).find(records[6].substr(0, 64));
  ASSERT_NE(record_6, std::string::npos);
  FlipBit(path, record_6 + 10, 0);
  EXPECT_THROW(ArrayRecordReader::Open(path, options)->ReadRecord(5), CorruptFileError);
  EXPECT_EQ(reader->ReadRecord(5), records[5]);
  EXPECT_EQ(reader->ReadRecords(std::vector<uint64_t>{5, 7}, 2),
            (std::vector<std::string>{records[5], records[7]}));
  std::filesystem::remove(path);
}

// Local files that say they are remote (HighLatency), counting the reads made one at a time,
// outside a ReadMany batch.
class HighLatencyFileSystem final : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> OpenForRead(const std::string& uri) const override {
    return std::make_unique<File>(LocalFileSystem()->OpenForRead(uri), single_reads_);
  }
  std::unique_ptr<WritableFile> OpenForWrite(const std::string& uri) const override {
    return LocalFileSystem()->OpenForWrite(uri);
  }
  int single_reads() const { return single_reads_->load(); }

 private:
  class File final : public RandomAccessFile {
   public:
    File(std::unique_ptr<RandomAccessFile> file, std::shared_ptr<std::atomic<int>> single_reads)
        : file_(std::move(file)), single_reads_(std::move(single_reads)) {}
    const std::string& path() const override { return file_->path(); }
    uint64_t size() const override { return file_->size(); }
    bool HighLatency() const override { return true; }
    void ReadAt(uint64_t offset, char* dst, uint64_t n) const override {
      ++*single_reads_;
      file_->ReadAt(offset, dst, n);
    }
    void ReadMany(std::span<const ReadRequest> requests) const override {
      file_->ReadMany(requests);
    }

   private:
    std::unique_ptr<RandomAccessFile> file_;
    std::shared_ptr<std::atomic<int>> single_reads_;
  };

  std::shared_ptr<std::atomic<int>> single_reads_ = std::make_shared<std::atomic<int>>(0);
};

// On a remote file, a batched read of records read in place (an uncompressed chunk of several
// records, checked before) sends their bytes as one batch with the chunks it reads whole: one
// round trip, not one per record (docs/remote.md).
TEST(ArrayRecordTest, RecordsReadInPlaceGoOutInTheBatch) {
  const auto [records, path, order, expected] = WriteInPlaceFile("in_place_remote", 5);
  const auto fs = std::make_shared<HighLatencyFileSystem>();
  ArrayRecordReaderOptions options;
  options.cache_chunks = 0;
  const auto reader = ArrayRecordReader::Open(path, options, fs);
  const int opening = fs->single_reads();
  EXPECT_EQ(reader->ReadRecords(order, 2), expected);  // whole chunks: their locations noted
  EXPECT_EQ(fs->single_reads(), opening);
  for (int threads : {1, 2}) {
    EXPECT_EQ(reader->ReadRecords(order, threads), expected);  // in place
    const std::vector<uint64_t> some{order.begin(), order.begin() + 7};
    EXPECT_EQ(reader->ReadRecords(some, threads),
              std::vector<std::string>(expected.begin(), expected.begin() + 7));
  }
  EXPECT_EQ(fs->single_reads(), opening);
  EXPECT_EQ(reader->ReadRecord(order[3]), expected[3]);  // one record: in place, alone
  EXPECT_GT(fs->single_reads(), opening);
  std::filesystem::remove(path);
}

// ---------------------------------------------------------------------------------------------
// Writer options
// ---------------------------------------------------------------------------------------------

TEST(ArrayRecordWriterOptionsTest, ParsesArrayRecordSyntax) {
  EXPECT_EQ(ArrayRecordWriterOptions::FromString("").ToString(),
            "group_size:1,transpose:false,pad_to_block_boundary:false,zstd:3,window_log:20,"
            "max_parallelism:1");
  EXPECT_EQ(ArrayRecordWriterOptions::FromString("group_size:65536,brotli").ToString(),
            "group_size:65536,transpose:false,pad_to_block_boundary:false,brotli:6,"
            "max_parallelism:1");
  EXPECT_EQ(ArrayRecordWriterOptions::FromString(
                "uncompressed,,group_size:3,pad_to_block_boundary:true,transpose:false,"
                "max_parallelism:auto")
                .ToString(),
            "group_size:3,transpose:false,pad_to_block_boundary:true,uncompressed,"
            "max_parallelism:1");
  const ArrayRecordWriterOptions zstd =
      ArrayRecordWriterOptions::FromString("zstd:-5,window_log:12");
  EXPECT_EQ(zstd.compression, ArrayRecordCompression::kZstd);
  EXPECT_EQ(zstd.compression_level, -5);
  EXPECT_EQ(zstd.window_log, 12);
  EXPECT_EQ(ArrayRecordWriterOptions::FromString("snappy").compression,
            ArrayRecordCompression::kSnappy);

  for (const char* bad : {"group_size:0", "group_size:x", "group_size", "zstd:23", "brotli:12",
                          "snappy:1", "uncompressed,window_log:20", "zstd,window_log:9",
                          "transpose", "transpose:true", "bogus", "pad_to_block_boundary:maybe"}) {
    EXPECT_THROW(ArrayRecordWriterOptions::FromString(bad), std::invalid_argument) << bad;
  }
  ArrayRecordWriterOptions options;
  options.group_size = 0;
  EXPECT_THROW(ArrayRecordWriter::Open(TempPath("bad_options"), options), std::invalid_argument);
}

TEST(ArrayRecordWriterTest, UseAfterCloseIsALogicError) {
  const std::string path = TempPath("closed");
  auto writer = ArrayRecordWriter::Open(path);
  writer->Write("a");
  writer->Close();
  EXPECT_THROW(writer->Write("b"), std::logic_error);
  EXPECT_THROW(writer->Close(), std::logic_error);
  std::filesystem::remove(path);
}

TEST(ArrayRecordWriterTest, CannotCreateFile) {
  EXPECT_THROW(ArrayRecordWriter::Open("/nonexistent-dir/x.array_record"), std::system_error);
  EXPECT_THROW(ArrayRecordReader::Open("/nonexistent-dir/x.array_record"), std::system_error);
}

// ---------------------------------------------------------------------------------------------
// Errors and corrupt input
// ---------------------------------------------------------------------------------------------

TEST(ArrayRecordErrorTest, IndexOutOfRange) {
  const std::string path = TempPath("range");
  WriteFile(path, {"a", "b"}, {});
  const auto reader = ArrayRecordReader::Open(path);
  const auto e = Catch<std::out_of_range>([&] { reader->ReadRecord(2); });
  EXPECT_CONTAINS(e.what(), path);
  EXPECT_CONTAINS(e.what(), "record index 2");
  EXPECT_THROW(reader->ReadRecords(std::vector<uint64_t>{0, 7}, 2), std::out_of_range);
  std::filesystem::remove(path);
}

TEST(ArrayRecordErrorTest, EmptyAndShortFiles) {
  const std::string path = TempPath("short");
  for (const std::string& bytes : {std::string(), std::string("hello\n"), std::string(65535, 'x'),
                                   std::string(70000, 'x')}) {
    WriteBytes(path, bytes);
    const auto e = Catch<CorruptFileError>([&] { ArrayRecordReader::Open(path); });
    EXPECT_EQ(e.path(), path);
    EXPECT_EQ(e.offset(), bytes.size());
    EXPECT_CONTAINS(e.what(), path + ": corrupt ArrayRecord file at byte offset");
  }
  std::filesystem::remove(path);
}

TEST(ArrayRecordErrorTest, NotAnArrayRecordFile) {
  const std::string path = TempPath("not_array_record");
  // Random bytes of a plausible size.
  WriteBytes(path, MakeRecord(1, 2 * kBlock));
  auto e = Catch<CorruptFileError>([&] { ArrayRecordReader::Open(path); });
  EXPECT_EQ(e.offset(), 0u);
  EXPECT_CONTAINS(e.what(), "not an ArrayRecord file");

  // A valid Riegeli file that is not an ArrayRecord file: records but no postscript.
  {
    internal::io::AppendFile file(path);
    internal::riegeli::ChunkWriter chunks(file);
    chunks.PadToBlockBoundary();
    internal::riegeli::SimpleChunkEncoder encoder({internal::riegeli::CompressionType::kNone});
    encoder.Add("hello");
    encoder.Add("world");
    const internal::riegeli::EncodedChunk chunk = encoder.Encode();
    chunks.WriteChunk(chunk.header, chunk.data);
    chunks.PadToBlockBoundary();
    file.Close();
  }
  ASSERT_EQ(std::filesystem::file_size(path), 2 * kBlock);
  e = Catch<CorruptFileError>([&] { ArrayRecordReader::Open(path); });
  EXPECT_EQ(e.offset(), kBlock);
  EXPECT_CONTAINS(e.what(), "RiegeliPostscript");
  std::filesystem::remove(path);
}

TEST(ArrayRecordErrorTest, WrongMagic) {
  const std::string path = TempPath("magic");
  WriteFile(path, {"a", "b"}, {});
  const std::string original = ReadBytes(path);

  // A bad Riegeli signature.
  std::string bytes = original;
  bytes[0] ^= 0x10;
  WriteBytes(path, bytes);
  auto e = Catch<CorruptFileError>([&] { ArrayRecordReader::Open(path); });
  EXPECT_EQ(e.offset(), 0u);
  EXPECT_CONTAINS(e.what(), "signature");

  // A well-formed postscript chunk with another magic number. Its data is 00 03 and three
  // record sizes, then the records.
  namespace layout = internal::array_record;
  bytes = original;
  const uint64_t postscript_offset = bytes.size() - kBlock;
  const std::string_view data = std::string_view(original).substr(postscript_offset + 64);
  layout::Postscript postscript =
      layout::ParsePostscript(data.substr(5, static_cast<uint8_t>(data[2])));
  postscript.magic ^= 1;
  internal::riegeli::SimpleChunkEncoder encoder({internal::riegeli::CompressionType::kNone});
  for (int i = 0; i < 3; ++i) encoder.Add(layout::Serialize(postscript));
  const internal::riegeli::EncodedChunk chunk = encoder.Encode();
  bytes.replace(postscript_offset + 24, 40, chunk.header.Encode().data(), 40);
  bytes.replace(postscript_offset + 64, chunk.data.size(), chunk.data);
  WriteBytes(path, bytes);
  e = Catch<CorruptFileError>([&] { ArrayRecordReader::Open(path); });
  EXPECT_EQ(e.offset(), postscript_offset);
  EXPECT_CONTAINS(e.what(), "magic");
  std::filesystem::remove(path);
}

// A file whose one data chunk is a transposed chunk ('t'), laid out as array_record would.
TEST(ArrayRecordErrorTest, TransposedChunkIsUnsupported) {
  using internal::riegeli::ChunkHeader;
  using internal::riegeli::ChunkType;
  namespace layout = internal::array_record;
  const std::string path = TempPath("transposed");
  {
    internal::io::AppendFile file(path);
    internal::riegeli::ChunkWriter chunks(file);
    const uint64_t chunk_offset = chunks.pos();
    const std::string data(20, '\0');  // contents are never looked at
    chunks.WriteChunk(ChunkHeader::For(ChunkType::kTransposed, data, 2, 6), data);
    const uint64_t footer_offset = chunks.pos();
    internal::riegeli::SimpleChunkEncoder footer({internal::riegeli::CompressionType::kNone});
    footer.Add(layout::Serialize(layout::FooterMetadata{1, 1, 2, "transpose:true"}));
    footer.Add(layout::Serialize(layout::FooterEntry{chunk_offset, 6, 2}));
    const auto footer_chunk = footer.Encode();
    chunks.WriteChunk(footer_chunk.header, footer_chunk.data);
    chunks.PadToBlockBoundary();
    internal::riegeli::SimpleChunkEncoder postscript({internal::riegeli::CompressionType::kNone});
    for (int i = 0; i < 3; ++i) {
      postscript.Add(layout::Serialize(layout::Postscript{footer_offset, layout::kMagic}));
    }
    const auto postscript_chunk = postscript.Encode();
    chunks.WriteChunk(postscript_chunk.header, postscript_chunk.data);
    chunks.PadToBlockBoundary();
    file.Close();
  }
  const auto reader = ArrayRecordReader::Open(path);
  EXPECT_EQ(reader->NumRecords(), 2u);
  const auto e = Catch<UnsupportedError>([&] { reader->ReadRecord(1); });
  EXPECT_EQ(e.path(), path);
  EXPECT_EQ(e.offset(), 64u);
  EXPECT_CONTAINS(e.what(), path + ": unsupported ArrayRecord feature at byte "
                                                      "offset 64: transposed");
  EXPECT_THROW(reader->ReadRecords(std::vector<uint64_t>{0, 1}, 2), UnsupportedError);
  std::filesystem::remove(path);
}

TEST(ArrayRecordErrorTest, TruncatedFiles) {
  // A multi-block file: a 150 KB record crosses block headers.
  const std::vector<std::string> records = MakeRecords({5, 150000, 7, 0, 30});
  const std::string path = TempPath("truncated_source");
  const std::string cut_path = TempPath("truncated");
  for (const char* options : {"group_size:2,zstd", "group_size:1,uncompressed"}) {
    WriteFile(path, records, ArrayRecordWriterOptions::FromString(options));
    const std::string bytes = ReadBytes(path);
    std::vector<size_t> cuts = {0, 1, 23, 24, 63, 64, 65, 100, kBlock - 1, kBlock, kBlock + 1,
                                2 * kBlock, 3 * kBlock, bytes.size() - kBlock, bytes.size() - 1};
    for (size_t cut = 7; cut < bytes.size(); cut += 4093) cuts.push_back(cut);
    for (const size_t cut : cuts) {
      if (cut >= bytes.size()) continue;
      WriteBytes(cut_path, bytes.substr(0, cut));
      const std::string context = std::string(options) + ", cut at " + std::to_string(cut);
      const auto e = Catch<CorruptFileError>([&] { ReadAll(*ArrayRecordReader::Open(cut_path)); });
      EXPECT_EQ(e.path(), cut_path) << context;
      EXPECT_CONTAINS(e.what(), cut_path + ": corrupt ArrayRecord file at byte offset");
    }
  }
  std::filesystem::remove(path);
  std::filesystem::remove(cut_path);
}

// Flips every bit of every structure (headers, data, footer, postscript) and a sample of the
// padding; each flip must give a CorruptFileError or the original records.
TEST(ArrayRecordErrorTest, BitFlipsNeverGiveWrongBytes) {
  const std::vector<std::string> records = MakeRecords({0, 3, 20, 1, 0, 9, 40, 2, 5, 11});
  const std::string path = TempPath("flips");
  for (const char* options : {"group_size:3,uncompressed", "group_size:3,zstd",
                              "group_size:1,snappy", "group_size:4,brotli:2"}) {
    WriteFile(path, records, ArrayRecordWriterOptions::FromString(options));
    const size_t size = std::filesystem::file_size(path);
    const size_t postscript = size - kBlock;
    std::vector<size_t> positions;
    for (size_t i = 0; i < size; ++i) {
      const bool structure = i < 700 || (i >= postscript && i < postscript + 120);
      if (structure || i % 211 == 0) positions.push_back(i);
    }
    size_t detected = 0;
    for (const size_t i : positions) {
      for (int bit = 0; bit < 8; ++bit) {
        FlipBit(path, i, bit);
        const std::string context = std::string(options) + ", byte " + std::to_string(i) +
                                    " bit " + std::to_string(bit);
        const bool threw = ExpectCorruptOrCorrect(path, records, context);
        detected += threw;
        // The signature and the postscript's block and chunk headers are always checked.
        if (i < 64 || (i >= postscript && i < postscript + 64)) EXPECT_TRUE(threw) << context;
        FlipBit(path, i, bit);
      }
    }
    // About half of the flips hit bytes that are read (the rest: padding).
    EXPECT_GT(detected, positions.size() * 8 / 3) << options;
  }
  std::filesystem::remove(path);
}

TEST(ArrayRecordErrorTest, BitFlipsInMultiBlockChunks) {
  // Chunks that cross block boundaries (block headers inside chunk data and chunk headers).
  const std::vector<std::string> records = MakeRecords({70000, 65400, 100, 140000, 3});
  const std::string path = TempPath("block_flips");
  WriteFile(path, records, ArrayRecordWriterOptions::FromString("group_size:1,uncompressed"));
  const size_t size = std::filesystem::file_size(path);
  std::vector<size_t> positions;
  for (size_t block = 0; block < size; block += kBlock) {
    for (size_t i = block; i < block + 24 + 64 && i < size; ++i) positions.push_back(i);
  }
  for (size_t i = 13; i < size; i += 1543) positions.push_back(i);
  for (const size_t i : positions) {
    FlipBit(path, i, i % 8);
    ExpectCorruptOrCorrect(path, records, "byte " + std::to_string(i));
    FlipBit(path, i, i % 8);
    if (HasFatalFailure()) return;
  }
  std::filesystem::remove(path);
}

TEST(ArrayRecordErrorTest, WithoutHashChecksCorruptionIsStillSafe) {
  // Hash checks off: wrong bytes are possible, but never a crash or an unbounded allocation.
  const std::vector<std::string> records = MakeRecords({0, 3, 20, 1, 900, 9, 40});
  const std::string path = TempPath("unchecked");
  ArrayRecordReaderOptions unchecked;
  unchecked.verify_data_hash = false;
  unchecked.verify_header_hashes = false;
  for (const char* options : {"group_size:3,zstd", "group_size:2,brotli", "group_size:2,snappy"}) {
    WriteFile(path, records, ArrayRecordWriterOptions::FromString(options));
    for (size_t i = 0; i < 1200; ++i) {
      FlipBit(path, i, i % 8);
      try {
        const auto reader = ArrayRecordReader::Open(path, unchecked);
        for (uint64_t r = 0; r < reader->NumRecords(); ++r) reader->ReadRecord(r);
      } catch (const FileFormatError&) {
      }
      FlipBit(path, i, i % 8);
    }
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace spelt
