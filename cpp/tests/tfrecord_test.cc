// Tests for spelt/tfrecord.h, spelt/tfrecord_source.h and spelt/tfrecord_dataset.h: the CRC32C
// and framing against published values, round trips (uncompressed, GZIP, ZLIB; records
// smaller and larger than the reader's buffer), detection, seeking, the iterator state, the
// random-access source, and corrupt input (each CRC, truncation), which must throw a
// CorruptFileError naming the file and the record's offset, never return wrong bytes.
#include "spelt/tfrecord.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spelt/errors.h"
#include "spelt/tfrecord_dataset.h"
#include "spelt/tfrecord_source.h"
#include "tfrecord/format.h"
#include "tfrecord/output_stream.h"

namespace spelt {
namespace {

using internal::tfrecord::Crc32c;
using internal::tfrecord::MaskCrc;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "spelt_tfrecord_" + std::to_string(::getpid()) + "_" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Records of the given sizes, each distinct.
std::vector<std::string> MakeRecords(const std::vector<size_t>& sizes) {
  std::vector<std::string> records;
  uint64_t x = 88172645463325252u;
  for (const size_t size : sizes) {
    std::string r(size, '\0');
    for (char& c : r) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x);
    }
    records.push_back(std::move(r));
  }
  return records;
}

std::string WriteRecords(const std::string& name, const std::vector<std::string>& records,
                         TFRecordCompression compression = TFRecordCompression::kNone) {
  const std::string path = TempPath(name);
  auto writer = TFRecordWriter::Open(path, compression);
  for (const std::string& r : records) writer->Write(r);
  writer->Close();
  return path;
}

std::vector<std::string> ReadAll(TFRecordReader& reader) {
  std::vector<std::string> out;
  std::string record;
  while (reader.ReadRecord(&record)) out.push_back(record);
  return out;
}

// The CorruptFileError that `f` throws (fails the test if it throws none).
template <typename F>
CorruptFileError CatchCorrupt(F f) {
  try {
    f();
  } catch (const CorruptFileError& e) {
    return e;
  }
  ADD_FAILURE() << "no CorruptFileError";
  return CorruptFileError("", 0, "", "none");
}

TEST(TFRecordFormatTest, Crc32cMatchesPublishedValues) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(Crc32c("6789", Crc32c("12345")), 0xE3069283u);  // extending
  EXPECT_EQ(MaskCrc(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc(0x80000000u), (1u << 16) + 0xa282ead8u);
}

TEST(TFRecordFormatTest, FileBytesAreTheFormat) {
  const std::string path = WriteRecords("bytes", {"abc"});
  const std::string bytes = ReadFile(path);
  ASSERT_EQ(bytes.size(), 12u + 3u + 4u);
  uint64_t length;
  std::memcpy(&length, bytes.data(), 8);
  EXPECT_EQ(length, 3u);
  uint32_t length_crc, data_crc;
  std::memcpy(&length_crc, bytes.data() + 8, 4);
  std::memcpy(&data_crc, bytes.data() + 15, 4);
  EXPECT_EQ(length_crc, MaskCrc(Crc32c(bytes.substr(0, 8))));
  EXPECT_EQ(bytes.substr(12, 3), "abc");
  EXPECT_EQ(data_crc, MaskCrc(Crc32c("abc")));
}

class TFRecordRoundTripTest : public ::testing::TestWithParam<TFRecordCompression> {};

TEST_P(TFRecordRoundTripTest, ReadsBackWhatWasWritten) {
  // Empty, small, exactly around the 256 KiB buffer, and several MiB.
  const std::vector<std::string> records =
      MakeRecords({0, 1, 1000, 7, 262128, 262129, 262144, 3 << 20, 5, 0, 100000});
  const std::string path = WriteRecords("round_trip", records, GetParam());
  EXPECT_EQ(DetectTFRecordCompression(path), GetParam());
  EXPECT_EQ(ReadAll(*TFRecordReader::Open(path)), records);
  EXPECT_EQ(ReadAll(*TFRecordReader::Open(path, GetParam())), records);
}

TEST_P(TFRecordRoundTripTest, SeeksToEveryTellPosition) {
  const std::vector<std::string> records = MakeRecords({10, 300000, 20, 0, 5000, 1});
  const std::string path = WriteRecords("seek", records, GetParam());
  auto reader = TFRecordReader::Open(path);
  std::vector<uint64_t> offsets;
  std::string record;
  do {
    offsets.push_back(reader->Tell());
  } while (reader->ReadRecord(&record));
  ASSERT_EQ(offsets.size(), records.size() + 1);
  EXPECT_EQ(offsets[0], 0u);
  // Backwards, so that compressed streams rewind every time.
  for (size_t k = offsets.size(); k-- > 0;) {
    reader->Seek(offsets[k]);
    EXPECT_EQ(reader->Tell(), offsets[k]);
    EXPECT_EQ(ReadAll(*reader), std::vector<std::string>(records.begin() + k, records.end()));
  }
  EXPECT_THROW(reader->Seek(offsets.back() + 1), std::invalid_argument);
  reader->Seek(offsets[1]);  // usable after a failed seek
  EXPECT_EQ(ReadAll(*reader).size(), records.size() - 1);
}

TEST_P(TFRecordRoundTripTest, TwoStepReadsIntoCallerMemory) {
  // Small, large (read past the buffer), and large after small (partly buffered).
  const std::vector<std::string> records =
      MakeRecords({10, 100000, 100000, 3, 20000, 500000, 0, 100000});
  const std::string path = WriteRecords("two_step", records, GetParam());
  auto reader = TFRecordReader::Open(path);
  EXPECT_FALSE(reader->NextStepBuffered()) << "nothing read yet";
  for (const std::string& expected : records) {
    const uint64_t offset = reader->Tell();
    const std::optional<uint64_t> length = reader->NextLength();
    ASSERT_TRUE(length);
    ASSERT_EQ(*length, expected.size());
    EXPECT_EQ(reader->Tell(), offset) << "NextLength does not move";
    std::vector<char> dst(*length + 1, '#');
    reader->ReadPayload(dst.data());
    EXPECT_EQ(std::string(dst.data(), *length), expected);
    EXPECT_EQ(dst[*length], '#') << "nothing written past the payload";
    EXPECT_EQ(reader->Tell(), offset + 16 + *length);
  }
  EXPECT_FALSE(reader->NextLength());
  EXPECT_THROW(reader->ReadPayload(nullptr), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(Compressions, TFRecordRoundTripTest,
                         ::testing::Values(TFRecordCompression::kNone, TFRecordCompression::kGzip,
                                           TFRecordCompression::kZlib));

TEST(TFRecordReaderTest, NextStepBufferedSaysWhenTheFileIsRead) {
  const std::string path = WriteRecords("buffered", MakeRecords({100, 100, 300000}));
  auto reader = TFRecordReader::Open(path);
  std::string record;
  ASSERT_TRUE(reader->ReadRecord(&record));  // fills the buffer: all of record 1 is in it
  EXPECT_TRUE(reader->NextStepBuffered());
  ASSERT_EQ(reader->NextLength(), 100u);
  EXPECT_TRUE(reader->NextStepBuffered());
  std::string payload(100, '\0');
  reader->ReadPayload(payload.data());
  ASSERT_EQ(reader->NextLength(), 300000u);  // larger than the buffer
  EXPECT_FALSE(reader->NextStepBuffered());
}

TEST(TFRecordReaderTest, CorruptLengthNeverAllocates) {
  // A length with a valid CRC that the file cannot hold is rejected by NextLength(), before a
  // caller allocates for it; for a gzip file, by deflate's largest ratio.
  std::string header(12, '\0');
  internal::tfrecord::EncodeHeader(uint64_t{1} << 60, header.data());
  const std::string path = TempPath("huge_length");
  WriteFile(path, header + "tail");
  auto reader = TFRecordReader::Open(path);
  EXPECT_EQ(CatchCorrupt([&] { reader->NextLength(); }).offset(), 0u);
  const std::string gz = TempPath("huge_length_gz");
  auto raw = internal::tfrecord::OpenOutputStream(gz, TFRecordCompression::kGzip, -1);
  raw->Write(header + "tail");
  raw->Close();
  auto gz_reader = TFRecordReader::Open(gz);
  ASSERT_EQ(gz_reader->compression(), TFRecordCompression::kGzip);
  EXPECT_EQ(CatchCorrupt([&] { gz_reader->NextLength(); }).offset(), 0u);
}

TEST(TFRecordReaderTest, EmptyFileHasNoRecords) {
  const std::string path = WriteRecords("empty", {});
  EXPECT_EQ(DetectTFRecordCompression(path), TFRecordCompression::kNone);
  EXPECT_TRUE(ReadAll(*TFRecordReader::Open(path)).empty());
}

TEST(TFRecordReaderTest, ConcatenatedGzipMembersAreOneStream) {
  const auto records = MakeRecords({10, 20, 30});
  const std::string a = WriteRecords("gz_a", {records[0]}, TFRecordCompression::kGzip);
  const std::string b =
      WriteRecords("gz_b", {records[1], records[2]}, TFRecordCompression::kGzip);
  const std::string path = TempPath("gz_ab");
  WriteFile(path, ReadFile(a) + ReadFile(b));
  EXPECT_EQ(ReadAll(*TFRecordReader::Open(path)), records);
}

TEST(TFRecordReaderTest, ParsesCompressionNames) {
  EXPECT_EQ(ParseTFRecordCompression(""), TFRecordCompression::kNone);
  EXPECT_EQ(ParseTFRecordCompression("GZIP"), TFRecordCompression::kGzip);
  EXPECT_EQ(ParseTFRecordCompression("ZLIB"), TFRecordCompression::kZlib);
  EXPECT_THROW(ParseTFRecordCompression("gzip2"), std::invalid_argument);
  EXPECT_EQ(TFRecordCompressionName(TFRecordCompression::kZlib), "ZLIB");
}

TEST(TFRecordReaderTest, AValidFirstRecordIsNeverTakenForGzip) {
  // A record of 0x8b1f + (8 << 16) bytes starts with the gzip magic 1f 8b 08.
  const std::string path = WriteRecords("looks_gzip", MakeRecords({0x088b1f}));
  ASSERT_EQ(ReadFile(path).substr(0, 3), "\x1f\x8b\x08");
  EXPECT_EQ(DetectTFRecordCompression(path), TFRecordCompression::kNone);
}

TEST(TFRecordReaderTest, MissingFileIsASystemError) {
  EXPECT_THROW(TFRecordReader::Open(TempPath("missing")), std::system_error);
}

// A three-record file (payloads of 5, 300000 and 7 bytes; offsets 0, 21, 300037).
class TFRecordCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    records_ = MakeRecords({5, 300000, 7});
    bytes_ = ReadFile(WriteRecords("corrupt_src", records_));
  }
  // Reads `bytes` to the end (uncompressed); returns the error.
  CorruptFileError ReadCorrupt(const std::string& bytes, std::vector<std::string>* got) {
    const std::string path = TempPath("corrupt");
    WriteFile(path, bytes);
    auto reader = TFRecordReader::Open(path, TFRecordCompression::kNone);
    CorruptFileError e = CatchCorrupt([&] {
      std::string r;
      while (reader->ReadRecord(&r)) got->push_back(r);
    });
    EXPECT_EQ(e.path(), path);
    EXPECT_EQ(reader->Tell(), e.offset()) << "the reader stays at the bad record";
    return e;
  }
  std::vector<std::string> records_;
  std::string bytes_;
};

TEST_F(TFRecordCorruptionTest, LengthCrcMismatchNamesTheRecord) {
  for (const size_t at : {0u, 8u, 21u + 3u, 21u + 11u, 300037u}) {  // length / its CRC
    std::string bad = bytes_;
    bad[at] ^= 0x10;
    std::vector<std::string> got;
    const CorruptFileError e = ReadCorrupt(bad, &got);
    const uint64_t record_offset = at < 21 ? 0 : at < 300037 ? 21 : 300037;
    EXPECT_EQ(e.offset(), record_offset) << "flipped byte " << at;
    EXPECT_NE(std::string(e.what()).find("corrupt TFRecord file at byte offset " +
                                         std::to_string(record_offset)),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.detail().find("length"), std::string::npos) << e.what();
    EXPECT_EQ(got.size(), at < 21 ? 0u : at < 300037 ? 1u : 2u);
  }
}

TEST_F(TFRecordCorruptionTest, PayloadCrcMismatchNamesTheRecord) {
  for (const size_t at : {12u, 16u, 21u + 12u + 150000u, 21u + 12u + 300000u, 300037u + 12u}) {
    std::string bad = bytes_;
    bad[at] ^= 0x01;
    std::vector<std::string> got;
    const CorruptFileError e = ReadCorrupt(bad, &got);
    const uint64_t record_offset = at < 21 ? 0 : at < 300037 ? 21 : 300037;
    EXPECT_EQ(e.offset(), record_offset) << "flipped byte " << at;
    EXPECT_NE(e.detail().find("payload"), std::string::npos) << e.what();
    EXPECT_EQ(got, std::vector<std::string>(records_.begin(), records_.begin() + got.size()));
  }
}

TEST_F(TFRecordCorruptionTest, TruncationNamesTheRecord) {
  for (const size_t size : {1u, 11u, 12u, 20u, 21u + 5u, 21u + 12u + 1000u, 300036u,
                            300037u + 12u + 7u + 3u}) {
    std::vector<std::string> got;
    const CorruptFileError e = ReadCorrupt(bytes_.substr(0, size), &got);
    EXPECT_EQ(e.offset(), size < 21 ? 0u : size < 300037 ? 21u : 300037u) << "size " << size;
    EXPECT_NE(e.detail().find("truncated"), std::string::npos) << e.what();
  }
}

TEST_F(TFRecordCorruptionTest, CorruptGzipDataIsACorruptFile) {
  const std::string path = WriteRecords("gz", records_, TFRecordCompression::kGzip);
  const std::string gz = ReadFile(path);
  for (const std::string& bad : {gz.substr(0, gz.size() / 2), gz.substr(0, gz.size() - 3)}) {
    WriteFile(path, bad);
    auto reader = TFRecordReader::Open(path, TFRecordCompression::kGzip);
    const CorruptFileError e = CatchCorrupt([&] { ReadAll(*reader); });
    EXPECT_EQ(e.path(), path);
  }
  std::string flipped = gz;
  flipped[gz.size() / 2] ^= 0x55;
  WriteFile(path, flipped);
  auto reader = TFRecordReader::Open(path, TFRecordCompression::kGzip);
  EXPECT_THROW(ReadAll(*reader), CorruptFileError);
}

TEST(TFRecordWriterTest, RejectsBadLevelAndWritesAfterClose) {
  EXPECT_THROW(TFRecordWriter::Open(TempPath("level"), TFRecordCompression::kGzip, 10),
               std::invalid_argument);
  auto writer = TFRecordWriter::Open(TempPath("closed"));
  writer->Write("x");
  EXPECT_EQ(writer->NumRecords(), 1u);
  writer->Close();
  writer->Close();
  EXPECT_THROW(writer->Write("y"), std::logic_error);
}

TEST(TFRecordIterDatasetTest, StateIsTheReaderOffsetAndRestores) {
  const auto records = MakeRecords({3, 0, 40, 300000, 2});
  for (const auto compression : {TFRecordCompression::kNone, TFRecordCompression::kGzip}) {
    const std::string path = WriteRecords("iter", records, compression);
    const IterDataset ds = TFRecordIterDataset(path);
    auto it = ds.MakeIterator();
    std::vector<State> states = {it->GetState()};
    EXPECT_EQ(states[0], State({{"reader_offset", 0}}));
    while (it->Next()) states.push_back(it->GetState());
    ASSERT_EQ(states.size(), records.size() + 1);
    EXPECT_EQ(states[1], State({{"reader_offset", 12 + 3 + 4}}));
    EXPECT_FALSE(it->Next());
    for (size_t k = 0; k < states.size(); ++k) {
      auto restored = ds.MakeIterator();
      restored->SetState(states[k]);
      for (size_t j = k; j < records.size(); ++j) {
        const std::optional<Value> v = restored->Next();
        ASSERT_TRUE(v);
        EXPECT_EQ(v->as<String>().data, records[j]);
      }
      EXPECT_FALSE(restored->Next());
    }
    EXPECT_THROW(it->SetState(State({{"reader_offset", -1}})), std::invalid_argument);
    EXPECT_THROW(it->SetState(State({{"offset", 0}})), std::invalid_argument);
  }
}

TEST(TFRecordSourceTest, IndexesFilesAndReadsAnyRecord) {
  const auto a = MakeRecords({10, 300000, 0, 20});
  const auto b = MakeRecords({7, 8});
  const std::string pa = WriteRecords("source_a", a), pb = WriteRecords("source_b", b);
  std::vector<uint64_t> progress;
  const TFRecordSource source({pa, pb}, "repr",
                              [&](uint64_t done, uint64_t total) {
                                EXPECT_EQ(total, ReadFile(pa).size() + ReadFile(pb).size());
                                progress.push_back(done);
                              });
  ASSERT_EQ(source.Length(), 6);
  EXPECT_EQ(progress.back(), ReadFile(pa).size() + ReadFile(pb).size());
  std::vector<std::string> all = a;
  all.insert(all.end(), b.begin(), b.end());
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(source.Get(i).as<String>().data, all[i]);
  const std::vector<int64_t> keys = {5, 0, 1, 2, 3, 4, 3, 5};
  std::vector<Value> got;
  source.GetMany(keys, &got);
  ASSERT_EQ(got.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(got[i].as<String>().data, all[keys[i]]);
  EXPECT_THROW(source.Get(6), std::out_of_range);
  EXPECT_THROW(source.Get(-1), std::out_of_range);
  EXPECT_EQ(source.Locate(1).offset, 12u + 10u + 4u);
  EXPECT_EQ(source.Locate(4).file, 1u);
}

TEST(TFRecordSourceTest, CorruptPayloadFailsOnRead) {
  const auto records = MakeRecords({10, 20, 30});
  const std::string path = WriteRecords("source_bad", records);
  std::string bytes = ReadFile(path);
  bytes[26 + 12 + 5] ^= 1;  // record 1's payload
  WriteFile(path, bytes);
  const TFRecordSource source({path}, "repr");
  EXPECT_EQ(source.Get(0).as<String>().data, records[0]);
  const CorruptFileError e = CatchCorrupt([&] { source.Get(1); });
  EXPECT_EQ(e.offset(), 26u);
  std::vector<Value> got;
  const std::vector<int64_t> keys = {0, 1, 2};
  EXPECT_THROW(source.GetMany(keys, &got), CorruptFileError);
  ASSERT_EQ(got.size(), 1u) << "the records before the bad one";
  EXPECT_EQ(got[0].as<String>().data, records[0]);
}

TEST(TFRecordSourceTest, BadFilesFailOnOpen) {
  const std::string bytes = ReadFile(WriteRecords("source_ok", MakeRecords({10, 20})));
  const std::string path = TempPath("source_truncated");
  WriteFile(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_EQ(CatchCorrupt([&] { TFRecordSource({path}, "r"); }).offset(), 26u);
  std::string bad = bytes;
  bad[26] ^= 4;
  WriteFile(path, bad);
  EXPECT_EQ(CatchCorrupt([&] { TFRecordSource({path}, "r"); }).offset(), 26u);
  const std::string gz = WriteRecords("source_gz", MakeRecords({10}), TFRecordCompression::kGzip);
  EXPECT_THROW(TFRecordSource({gz}, "r"), std::invalid_argument);
  EXPECT_THROW(TFRecordSource({}, "r"), std::invalid_argument);
}

}  // namespace
}  // namespace spelt
