// Tests for the Riegeli layer under the ArrayRecord reader and writer (cpp/src/riegeli_*):
// hash, varints, position arithmetic, headers, codecs and simple chunks. Expected bytes are
// from shared/reference/arrayrecord-format.md (checked there against real files).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "array_record/layout.h"
#include "riegeli/compression.h"
#include "riegeli/format.h"
#include "riegeli/hash.h"
#include "riegeli/simple_chunk.h"
#include "riegeli/varint.h"

namespace spelt::internal::riegeli {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

template <size_t N>
std::string Str(const std::array<char, N>& a) {
  return std::string(a.data(), N);
}

// The fixed first 64 bytes of every Riegeli file (spec §1.5).
const std::string kFilePrefix = Bytes({
    0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x91, 0xba, 0xc2, 0x3c, 0x92, 0x87, 0xe1, 0xa9,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe1, 0x9f, 0x13, 0xc0, 0xe9, 0xb1, 0xc3, 0x72,
    0x73, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
});

TEST(RiegeliHashTest, SignatureHashes) {
  const std::string_view prefix = kFilePrefix;
  EXPECT_EQ(Hash(prefix.substr(8, 16)), 0x3f4a880dd170af83u);   // block header
  EXPECT_EQ(Hash(prefix.substr(32, 32)), 0xa9e187923cc2ba91u);  // chunk header
  EXPECT_EQ(Hash(""), 0x72c3b1e9c0139fe1u);                     // empty data
}

TEST(RiegeliFormatTest, HeadersEncodeTheFileSignature) {
  const std::string block = Str(BlockHeader{0, 64}.Encode());
  const std::string chunk = Str(ChunkHeader::For(ChunkType::kFileSignature, "", 0, 0).Encode());
  EXPECT_EQ(block + chunk, kFilePrefix);
}

TEST(RiegeliFormatTest, HeadersRoundTripAndCheckHashes) {
  const ChunkHeader header{1234, 0x1122334455667788u, ChunkType::kSimple, (uint64_t{1} << 56) - 1,
                           99};
  std::string bytes = Str(header.Encode());
  const ChunkHeader decoded = ChunkHeader::Decode(bytes, true);
  EXPECT_EQ(decoded.data_size, 1234u);
  EXPECT_EQ(decoded.data_hash, 0x1122334455667788u);
  EXPECT_EQ(decoded.chunk_type, ChunkType::kSimple);
  EXPECT_EQ(decoded.num_records, (uint64_t{1} << 56) - 1);
  EXPECT_EQ(decoded.decoded_data_size, 99u);
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::string flipped = bytes;
    flipped[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_THROW(ChunkHeader::Decode(flipped, true), FormatError) << "bit " << bit;
    EXPECT_NO_THROW(ChunkHeader::Decode(flipped, false));
  }
  std::string block = Str(BlockHeader{5, 7}.Encode());
  EXPECT_EQ(BlockHeader::Decode(block, true).next_chunk, 7u);
  block[20] ^= 1;
  EXPECT_THROW(BlockHeader::Decode(block, true), FormatError);
}

TEST(RiegeliFormatTest, PositionArithmetic) {
  EXPECT_EQ(RemainingInBlock(0), 0u);
  EXPECT_EQ(RemainingInBlock(1), kBlockSize - 1);
  EXPECT_EQ(RemainingInBlock(kBlockSize - 1), 1u);
  EXPECT_TRUE(IsPossibleChunkBoundary(0));
  EXPECT_FALSE(IsPossibleChunkBoundary(1));
  EXPECT_FALSE(IsPossibleChunkBoundary(kBlockSize + kBlockHeaderSize));
  EXPECT_TRUE(IsPossibleChunkBoundary(kBlockSize + kBlockHeaderSize + 1));
  EXPECT_TRUE(IsPossibleChunkBoundary(kBlockSize - 1));

  // The chunks of the upstream digits file (spec §2.1).
  EXPECT_EQ(ChunkEnd(ChunkHeader{0, 0, ChunkType::kFileSignature, 0, 0}, 0), 64u);
  EXPECT_EQ(ChunkEnd(ChunkHeader{4, 0, ChunkType::kSimple, 1, 1}, 64), 108u);
  EXPECT_EQ(ChunkEnd(ChunkHeader{44, 0, ChunkType::kSimple, 3, 39}, 65536), 65644u);
  EXPECT_EQ(ChunkEnd(ChunkHeader{131072 - 65644 - 40, 0, ChunkType::kPadding, 0, 0}, 65644),
            131072u);
  // Data running over one block boundary gains one block header.
  EXPECT_EQ(ChunkEnd(ChunkHeader{kBlockSize, 0, ChunkType::kSimple, 1, 0}, 100),
            100 + kChunkHeaderSize + kBlockSize + kBlockHeaderSize);
  // Many records in little data: padded to one byte per record, never ending in a header.
  EXPECT_EQ(ChunkEnd(ChunkHeader{10, 0, ChunkType::kSimple, 65536 - 100, 0}, 100), 65536u);
  EXPECT_EQ(ChunkEnd(ChunkHeader{10, 0, ChunkType::kSimple, 65536 - 90, 0}, 100),
            kBlockSize + kBlockHeaderSize + 1);
}

// PhysicalPosition agrees with walking the file byte by byte, skipping block headers.
TEST(RiegeliFormatTest, PhysicalPositionSkipsBlockHeaders) {
  for (const uint64_t begin : {uint64_t{64}, kBlockSize, kBlockSize - 1, 3 * kBlockSize + 100}) {
    uint64_t position = begin;
    for (uint64_t offset = 0; offset < 3 * kBlockSize; ++offset, ++position) {
      if (IsBlockBoundary(position)) position += kBlockHeaderSize;
      ASSERT_EQ(PhysicalPosition(begin, offset), position) << begin << " + " << offset;
    }
  }
}

TEST(RiegeliVarintTest, RoundTripsAndRejectsBadInput) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{300},
                     uint64_t{1} << 35, ~uint64_t{0}}) {
    std::string s;
    AppendVarint64(v, s);
    s += "rest";
    std::string_view in = s;
    uint64_t out = 0;
    ASSERT_TRUE(ReadVarint64(in, out));
    EXPECT_EQ(out, v);
    EXPECT_EQ(in, "rest");
  }
  std::string_view truncated = "\x80\x80";
  uint64_t out = 0;
  EXPECT_FALSE(ReadVarint64(truncated, out));
  EXPECT_EQ(truncated.size(), 2u);
  const std::string too_long = Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02});
  std::string_view in = too_long;
  EXPECT_FALSE(ReadVarint64(in, out));
}

class RiegeliCompressionTest : public ::testing::TestWithParam<CompressionType> {};

CompressionOptions OptionsFor(CompressionType type) {
  switch (type) {
    case CompressionType::kZstd: return {type, 3, 20};
    case CompressionType::kBrotli: return {type, 6, 22};
    default: return {type};
  }
}

TEST_P(RiegeliCompressionTest, RoundTripsAndChecksSizes) {
  const CompressionOptions options = OptionsFor(GetParam());
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "record " + std::to_string(i * 7919 % 1000) + ";";
  for (const std::string& src : {std::string(), std::string("x"), text}) {
    std::string framed;
    AppendCompressed(options, src, framed);
    Buffer storage;
    EXPECT_EQ(Decompress(GetParam(), framed, src.size(), storage), src);
    if (!src.empty()) {
      EXPECT_THROW(Decompress(GetParam(), framed, src.size() - 1, storage), FormatError);
    }
  }
  if (GetParam() == CompressionType::kNone) return;
  std::string framed;
  AppendCompressed(options, text, framed);
  // A wrong stated size (varint prefix) is caught after decoding.
  std::string wrong_size;
  AppendVarint64(text.size() + 1, wrong_size);
  std::string_view rest = framed;
  uint64_t size = 0;
  ASSERT_TRUE(ReadVarint64(rest, size));
  wrong_size.append(rest);
  Buffer storage;
  EXPECT_THROW(Decompress(GetParam(), wrong_size, text.size() * 2, storage), FormatError);
  // Truncated and garbled streams.
  EXPECT_THROW(Decompress(GetParam(), framed.substr(0, framed.size() - 3), text.size(), storage),
               FormatError);
  std::string garbled = framed;
  for (size_t i = 8; i < garbled.size(); i += 7) garbled[i] ^= 0x5a;
  EXPECT_THROW(Decompress(GetParam(), garbled, text.size(), storage), FormatError);
}

INSTANTIATE_TEST_SUITE_P(Codecs, RiegeliCompressionTest,
                         ::testing::Values(CompressionType::kNone, CompressionType::kZstd,
                                           CompressionType::kBrotli, CompressionType::kSnappy),
                         [](const auto& info) {
                           return std::string(CompressionName(info.param));
                         });

TEST(RiegeliCompressionTypeTest, UnknownTypeIsAFormatError) {
  EXPECT_EQ(ParseCompressionType('z'), CompressionType::kZstd);
  EXPECT_THROW(ParseCompressionType('x'), FormatError);
}

Chunk AsReadChunk(const EncodedChunk& encoded) {
  Chunk chunk;
  chunk.header = encoded.header;
  chunk.storage = Buffer(encoded.data.size());
  std::copy(encoded.data.begin(), encoded.data.end(), chunk.storage.data());
  chunk.data = chunk.storage.view();
  return chunk;
}

TEST(RiegeliSimpleChunkTest, PostscriptChunkMatchesUpstreamBytes) {
  // The postscript chunk of the digits file (spec §2.1): footer_offset 284, three copies.
  const std::string record =
      array_record::Serialize(array_record::Postscript{284, array_record::kMagic});
  EXPECT_EQ(record, Bytes({0x08, 0x9c, 0x02, 0x10, 0xde, 0xc0, 0xeb, 0xfe, 0x84, 0xce, 0xc3,
                           0xc9, 0x71}));
  SimpleChunkEncoder encoder({CompressionType::kNone});
  for (int i = 0; i < 3; ++i) encoder.Add(record);
  const EncodedChunk chunk = encoder.Encode();
  EXPECT_EQ(chunk.data, Bytes({0x00, 0x03, 0x0d, 0x0d, 0x0d}) + record + record + record);
  EXPECT_EQ(chunk.header.num_records, 3u);
  EXPECT_EQ(chunk.header.decoded_data_size, 39u);
}

TEST(RiegeliSimpleChunkTest, RoundTripsAndRejectsInconsistentChunks) {
  for (CompressionType type : {CompressionType::kNone, CompressionType::kZstd,
                               CompressionType::kBrotli, CompressionType::kSnappy}) {
    SimpleChunkEncoder encoder(OptionsFor(type));
    const std::vector<std::string> records = {"", "a", std::string(1000, 'b'), "", "cd"};
    for (const std::string& r : records) encoder.Add(r);
    const EncodedChunk encoded = encoder.Encode();
    const DecodedChunk decoded = DecodeSimpleChunk(AsReadChunk(encoded), 1 << 20);
    ASSERT_EQ(decoded.num_records(), records.size());
    for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(decoded.record(i), records[i]);
    EXPECT_EQ(encoder.num_records(), 0u);  // Encode() starts a new chunk

    Chunk wrong_count = AsReadChunk(encoded);
    wrong_count.header.num_records = 4;
    EXPECT_THROW(DecodeSimpleChunk(std::move(wrong_count), 1 << 20), FormatError);
    Chunk wrong_size = AsReadChunk(encoded);
    wrong_size.header.decoded_data_size += 1;
    EXPECT_THROW(DecodeSimpleChunk(std::move(wrong_size), 1 << 20), FormatError);
    EXPECT_THROW(DecodeSimpleChunk(AsReadChunk(encoded), 1000), FormatError);  // over the limit
  }
}

TEST(RiegeliLayoutTest, ParsesFooterMessages) {
  // Footer metadata of the digits file (spec §2.2).
  const std::string options =
      "group_size:1,transpose:false,pad_to_block_boundary:false,uncompressed,max_parallelism:1";
  const std::string metadata_bytes =
      Bytes({0x0a, 0x5f, 0x08, 0x01, 0x10, 0x05, 0x18, 0x05, 0x22, 0x57}) + options;
  const array_record::FooterMetadata metadata = array_record::ParseFooterMetadata(metadata_bytes);
  EXPECT_EQ(metadata.version, 1u);
  EXPECT_EQ(metadata.num_chunks, 5u);
  EXPECT_EQ(metadata.num_records, 5u);
  EXPECT_EQ(metadata.writer_options, options);
  EXPECT_EQ(array_record::Serialize(metadata), metadata_bytes);

  const std::string entry_bytes = Bytes({0x08, 0x40, 0x10, 0x01, 0x18, 0x01});
  const array_record::FooterEntry entry = array_record::ParseFooterEntry(entry_bytes);
  EXPECT_EQ(entry.chunk_offset, 64u);
  EXPECT_EQ(entry.decoded_data_size, 1u);
  EXPECT_EQ(entry.num_records, 1u);
  EXPECT_EQ(array_record::Serialize(entry), entry_bytes);
  // Unknown fields (varint, fixed64, bytes, fixed32) are skipped.
  const std::string with_unknown = Bytes({0x28, 0x05, 0x31, 1, 2, 3, 4, 5, 6, 7, 8, 0x3a, 0x01,
                                          0x00, 0x45, 1, 2, 3, 4}) + entry_bytes;
  EXPECT_EQ(array_record::ParseFooterEntry(with_unknown).chunk_offset, 64u);

  EXPECT_THROW(array_record::ParseFooterEntry(Bytes({0x10, 0x01})), FormatError);  // no offset
  EXPECT_THROW(array_record::ParsePostscript(Bytes({0x08, 0x01})), FormatError);   // no magic
  EXPECT_THROW(array_record::ParseFooterMetadata(""), FormatError);
  EXPECT_THROW(array_record::ParseFooterEntry(Bytes({0x08})), FormatError);        // truncated
  EXPECT_THROW(array_record::ParseFooterEntry(Bytes({0x0b, 0x00})), FormatError);  // group
  EXPECT_THROW(array_record::ParseFooterEntry(Bytes({0x0a, 0x00})), FormatError);  // wire type
}

}  // namespace
}  // namespace spelt::internal::riegeli
