// Tests for tfrecord/read_ahead.h: the records, offsets and errors of a gzip file read ahead
// (runs of several records, a record larger than a run) are the plain reader's, in order,
// through both reading styles, seeks, a corrupt record and an early destruction.
#include "tfrecord/read_ahead.h"

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/errors.h"
#include "spelt/tfrecord.h"
#include "tfrecord/format.h"
#include "tfrecord/output_stream.h"

namespace spelt::internal::tfrecord {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "spelt_read_ahead_" + std::to_string(::getpid()) + "_" + name;
}

// Record k has size sizes[k % sizes.size()] and bytes that depend on k.
std::vector<std::string> MakeRecords(size_t n, const std::vector<size_t>& sizes) {
  std::vector<std::string> records;
  for (size_t k = 0; k < n; ++k) {
    std::string r(sizes[k % sizes.size()], '\0');
    for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<char>(k * 131 + i * 7);
    records.push_back(std::move(r));
  }
  return records;
}

// The gzip file of `records`, framed; `corrupt` flips a payload byte of that record.
std::string WriteGzip(const std::string& name, const std::vector<std::string>& records,
                      size_t corrupt = SIZE_MAX) {
  std::string bytes;
  for (size_t k = 0; k < records.size(); ++k) {
    char header[kHeaderSize], footer[kFooterSize];
    EncodeHeader(records[k].size(), header);
    EncodeFooter(records[k], footer);
    bytes.append(header, kHeaderSize);
    bytes += records[k];
    if (k == corrupt) bytes[bytes.size() - 1] ^= 1;
    bytes.append(footer, kFooterSize);
  }
  const std::string path = TempPath(name);
  auto out = OpenOutputStream(path, TFRecordCompression::kGzip, 1);
  out->Write(bytes);
  out->Close();
  return path;
}

std::unique_ptr<TFRecordReader> OpenAhead(const std::string& path) {
  return MakeReadAheadReader(TFRecordReader::Open(path));
}

// 300 records: small ones (many per run) and, every 50th, one larger than a run.
const std::vector<size_t> kSizes = {1000, 30000, 0, 70000, 5};
std::vector<std::string> Records() {
  auto records = MakeRecords(300, kSizes);
  for (size_t k = 0; k < records.size(); k += 50) records[k].assign(kRunBytes + 3, 'x');
  return records;
}

TEST(TFRecordReadAheadTest, RecordsAndOffsetsAreThePlainReaders) {
  const auto records = Records();
  const std::string path = WriteGzip("all", records);
  auto plain = TFRecordReader::Open(path);
  auto ahead = OpenAhead(path);
  EXPECT_EQ(ahead->compression(), TFRecordCompression::kGzip);
  EXPECT_EQ(ahead->path(), path);
  std::string record;
  for (size_t k = 0; k < records.size(); ++k) {
    ASSERT_EQ(ahead->Tell(), plain->Tell()) << k;
    if (k % 2 == 0) {
      ASSERT_TRUE(ahead->ReadRecord(&record));
    } else {  // the two-step style, asking twice for the length
      ASSERT_EQ(ahead->NextLength(), records[k].size());
      ASSERT_EQ(ahead->NextLength(), records[k].size());
      EXPECT_TRUE(ahead->NextStepBuffered());
      record.assign(records[k].size(), '\0');
      ahead->ReadPayload(record.data());
    }
    ASSERT_EQ(record, records[k]) << k;
    ASSERT_TRUE(plain->ReadRecord(&record));
  }
  EXPECT_EQ(ahead->Tell(), plain->Tell());
  EXPECT_FALSE(ahead->ReadRecord(&record));
  EXPECT_FALSE(ahead->NextLength());
  EXPECT_TRUE(ahead->NextStepBuffered());
  EXPECT_THROW(ahead->ReadPayload(record.data()), std::logic_error);
}

TEST(TFRecordReadAheadTest, EmptyRecordsFirst) {
  // Found by the fuzzer: an empty first record was read into a run with no buffer yet.
  const std::vector<std::string> records = {"", "", "a", ""};
  auto ahead = OpenAhead(WriteGzip("empty_first", records));
  std::string record = "x";
  for (const std::string& want : records) {
    ASSERT_EQ(ahead->NextLength(), want.size());
    ahead->ReadPayload(record.data());
    ASSERT_TRUE(want.empty() || record.substr(0, 1) == want);
  }
  EXPECT_FALSE(ahead->ReadRecord(&record));
}

TEST(TFRecordReadAheadTest, SeeksBackAndForth) {
  const auto records = Records();
  const std::string path = WriteGzip("seek", records);
  std::vector<uint64_t> offsets;  // of each record
  auto plain = TFRecordReader::Open(path);
  std::string record;
  do offsets.push_back(plain->Tell());
  while (plain->ReadRecord(&record));
  auto ahead = OpenAhead(path);
  for (const size_t k : {size_t{120}, size_t{3}, size_t{299}, size_t{300}, size_t{0}}) {
    ahead->Seek(offsets[k]);
    EXPECT_EQ(ahead->Tell(), offsets[k]);
    for (size_t j = k; j < std::min<size_t>(k + 60, records.size()); ++j) {
      ASSERT_TRUE(ahead->ReadRecord(&record));
      ASSERT_EQ(record, records[j]) << k << " " << j;
    }
  }
  EXPECT_THROW(ahead->Seek(offsets.back() + (uint64_t{1} << 40)), std::invalid_argument);
}

TEST(TFRecordReadAheadTest, ACorruptRecordFailsInPlaceAndAgain) {
  const auto records = Records();
  const size_t bad = 137;
  const std::string path = WriteGzip("corrupt", records, bad);
  auto ahead = OpenAhead(path);
  std::string record;
  for (size_t k = 0; k < bad; ++k) {
    ASSERT_TRUE(ahead->ReadRecord(&record));
    ASSERT_EQ(record, records[k]);
  }
  const uint64_t offset = ahead->Tell();
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      ahead->ReadRecord(&record);
      ADD_FAILURE() << "no error";
    } catch (const CorruptFileError& e) {
      EXPECT_EQ(e.offset(), offset);
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    }
    EXPECT_EQ(ahead->Tell(), offset);
  }
}

TEST(TFRecordReadAheadTest, DestroyingItWhileReadingAheadIsSafe) {
  const std::string path = WriteGzip("early", Records());
  for (int i = 0; i < 20; ++i) {
    auto ahead = OpenAhead(path);
    std::string record;
    for (int k = 0; k < i; ++k) ASSERT_TRUE(ahead->ReadRecord(&record));
  }
}

}  // namespace
}  // namespace spelt::internal::tfrecord
