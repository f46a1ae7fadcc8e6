// ArrayRecordWriter: data chunks of group_size records, then the footer chunk (footer metadata
// and one entry per data chunk), padding to a block boundary, the postscript chunk (three
// copies of the postscript) and padding again, as array_record's writer lays a file out.
// Spec: arrayrecord-format.md §2.1.
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/append_file.h"
#include "array_record/layout.h"
#include "array_record/writer_options.h"
#include "riegeli/chunk_writer.h"
#include "riegeli/simple_chunk.h"
#include "spelt/array_record.h"

namespace spelt {
namespace {

using internal::io::AppendFile;
using internal::array_record::FooterEntry;
using internal::array_record::FooterMetadata;
using internal::array_record::Postscript;
using internal::array_record::Serialize;
using internal::riegeli::ChunkWriter;
using internal::riegeli::CompressionType;
using internal::riegeli::EncodedChunk;
using internal::riegeli::SimpleChunkEncoder;

constexpr int kPostscriptCopies = 3;

class ArrayRecordWriterImpl final : public ArrayRecordWriter {
 public:
  ArrayRecordWriterImpl(const std::string& path, ArrayRecordWriterOptions options,
                        const FileSystemPtr& fs)
      : options_(std::move(options)),
        file_(path, fs),
        chunk_writer_(file_),
        encoder_(internal::array_record::CompressionOf(options_)) {}

  void Write(std::string_view record) override {
    CheckUsable();
    Guarded([&] {
      encoder_.Add(record);
      ++num_records_;
      if (encoder_.num_records() == options_.group_size) WriteDataChunk();
    });
  }

  uint64_t NumRecords() const override { return num_records_; }

  void Close() override {
    CheckUsable();
    Guarded([&] {
      if (encoder_.num_records() > 0) WriteDataChunk();
      const uint64_t footer_offset = chunk_writer_.pos();
      WriteChunk(EncodeFooter());
      chunk_writer_.PadToBlockBoundary();
      SimpleChunkEncoder postscript_encoder({CompressionType::kNone});
      const std::string postscript =
          Serialize(Postscript{footer_offset, internal::array_record::kMagic});
      for (int i = 0; i < kPostscriptCopies; ++i) postscript_encoder.Add(postscript);
      WriteChunk(postscript_encoder.Encode());
      chunk_writer_.PadToBlockBoundary();
      file_.Close();
    });
    state_ = State::kClosed;
  }

 private:
  enum class State { kOpen, kFailed, kClosed };

  void CheckUsable() const {
    if (state_ == State::kClosed) throw std::logic_error("ArrayRecordWriter used after Close()");
    if (state_ == State::kFailed) throw std::logic_error("ArrayRecordWriter used after an error");
  }

  // Runs `fn`; if it throws, the writer is failed (the file is in an unknown state).
  template <typename Fn>
  void Guarded(Fn fn) {
    try {
      fn();
    } catch (...) {
      state_ = State::kFailed;
      throw;
    }
  }

  void WriteChunk(const EncodedChunk& chunk) { chunk_writer_.WriteChunk(chunk.header, chunk.data); }

  void WriteDataChunk() {
    const uint64_t offset = chunk_writer_.pos();
    const EncodedChunk chunk = encoder_.Encode();
    WriteChunk(chunk);
    if (options_.pad_to_block_boundary) chunk_writer_.PadToBlockBoundary();
    footer_.push_back(
        FooterEntry{offset, chunk.header.decoded_data_size, chunk.header.num_records});
  }

  // Record 0: the footer metadata; then one entry per data chunk. Compressed like the data.
  EncodedChunk EncodeFooter() {
    SimpleChunkEncoder footer_encoder(internal::array_record::CompressionOf(options_));
    footer_encoder.Add(Serialize(FooterMetadata{internal::array_record::kVersion, footer_.size(),
                                                num_records_, options_.ToString()}));
    for (const FooterEntry& entry : footer_) footer_encoder.Add(Serialize(entry));
    return footer_encoder.Encode();
  }

  const ArrayRecordWriterOptions options_;
  AppendFile file_;
  ChunkWriter chunk_writer_;
  SimpleChunkEncoder encoder_;
  std::vector<FooterEntry> footer_;
  uint64_t num_records_ = 0;
  State state_ = State::kOpen;
};

}  // namespace

std::unique_ptr<ArrayRecordWriter> ArrayRecordWriter::Open(const std::string& path,
                                                           ArrayRecordWriterOptions options,
                                                           const FileSystemPtr& fs) {
  options.Validate();
  return std::make_unique<ArrayRecordWriterImpl>(path, std::move(options), fs);
}

}  // namespace spelt
