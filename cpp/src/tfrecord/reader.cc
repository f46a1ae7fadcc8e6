// TFRecordReader (spelt/tfrecord.h): a buffered reader over an InputStream. Records that are
// in the buffer are copied out of it once; the rest of a large record is read from the stream
// straight into the record's memory, together with a little of what follows (its footer and
// the next header) into the buffer, so that a file of large records is copied once.
#include <cstring>
#include <memory>

#include "spelt/tfrecord.h"
#include "tfrecord/format.h"
#include "tfrecord/input_stream.h"
#include "tfrecord/read_ahead.h"

namespace spelt {
namespace {

using internal::tfrecord::kFooterSize;
using internal::tfrecord::kHeaderSize;
using internal::tfrecord::ThrowCorrupt;

constexpr size_t kBufferSize = size_t{256} << 10;
// Payloads at least this large are read past the buffer, straight into their memory.
constexpr uint64_t kDirectMin = uint64_t{16} << 10;
// Bytes read into the buffer after a payload read past it: the footer, the next header and
// the start of the next payload.
constexpr size_t kLookahead = size_t{4} << 10;

class Reader final : public TFRecordReader {
 public:
  // Reads `file` through `reads` (of `file`; a new one if null).
  Reader(std::shared_ptr<const RandomAccessFile> file, TFRecordCompression compression,
         std::unique_ptr<internal::SequentialReads> reads = nullptr)
      : path_(file->path()),
        compression_(compression),
        file_(std::move(file)),
        in_(internal::tfrecord::OpenInputStream(file_, compression, std::move(reads))),
        buffer_(new char[kBufferSize]) {}

  bool ReadRecord(std::string* record) override {
    const std::optional<uint64_t> length = NextLength();
    if (!length) return false;
    if (const char* payload = BufferedPayload(*length)) {
      record->assign(payload, *length);
      Consume(kHeaderSize + *length + kFooterSize);
      pending_.reset();
      return true;
    }
    record->resize(*length);
    ReadPayload(record->data());
    return true;
  }

  std::optional<uint64_t> NextLength() override {
    pending_.reset();
    const uint64_t offset = Tell();
    const size_t have = std::min(Fill(kHeaderSize), kHeaderSize);
    if (have == 0) return std::nullopt;
    const uint64_t limit = in_->SizeLimit();
    const uint64_t after_header = limit > offset + kHeaderSize ? limit - offset - kHeaderSize : 0;
    const uint64_t length = internal::tfrecord::CheckedLength(path_, offset, buffer_.get() + pos_,
                                                              have, after_header);
    pending_ = length;
    return length;
  }

  void ReadPayload(char* dst) override {
    if (!pending_) throw std::logic_error("TFRecordReader::ReadPayload without NextLength");
    const uint64_t length = *pending_;
    const uint64_t offset = Tell();
    if (length < kDirectMin) Fill(kHeaderSize + length + kFooterSize);  // fits: see kDirectMin
    if (const char* payload = BufferedPayload(length)) {
      std::memcpy(dst, payload, length);
      Consume(kHeaderSize + length + kFooterSize);
      pending_.reset();
      return;
    }
    try {
      if (length < kDirectMin) {
        ThrowCorrupt(path_, offset,
                     internal::tfrecord::TruncatedDetail(length, end_ - pos_ - kHeaderSize));
      }
      ReadPast(dst, length, offset);
    } catch (...) {
      Seek(offset);
      throw;
    }
    pending_.reset();
  }

  bool NextStepBuffered() const override {
    const size_t have = end_ - pos_;
    if (!pending_) return have >= kHeaderSize;
    return have - kHeaderSize >= kFooterSize && *pending_ <= have - kHeaderSize - kFooterSize;
  }

  uint64_t Tell() const override { return stream_position_ - (end_ - pos_); }

  void Seek(uint64_t offset) override {
    pending_.reset();
    const uint64_t buffer_start = stream_position_ - end_;
    if (offset >= buffer_start && offset <= stream_position_) {
      pos_ = static_cast<size_t>(offset - buffer_start);
      return;
    }
    pos_ = end_ = 0;
    stream_position_ = offset;
    try {
      in_->Seek(offset);
    } catch (...) {
      stream_position_ = 0;  // the stream is wherever the failed seek left it: start again
      in_ = internal::tfrecord::OpenInputStream(file_, compression_);
      throw;
    }
  }

  const std::string& path() const override { return path_; }
  TFRecordCompression compression() const override { return compression_; }

 private:
  // Buffers at least `n` <= kBufferSize bytes from pos_ unless the stream ends first; returns
  // the bytes buffered from pos_.
  size_t Fill(size_t n) {
    if (end_ - pos_ >= n) return end_ - pos_;
    std::memmove(buffer_.get(), buffer_.get() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
    while (end_ < n) {
      const size_t got = in_->Read(buffer_.get() + end_, kBufferSize - end_);
      if (got == 0) break;
      end_ += got;
      stream_position_ += got;
    }
    return end_;
  }

  void Consume(size_t n) { pos_ += n; }

  // The payload of the record at pos_ (of `length` bytes), CRC checked, if the whole record is
  // buffered; else null.
  const char* BufferedPayload(uint64_t length) {
    if (!NextStepBuffered()) return nullptr;
    const char* payload = buffer_.get() + pos_ + kHeaderSize;
    internal::tfrecord::CheckFooter(path_, Tell(), std::string_view(payload, length),
                                   payload + length);
    return payload;
  }

  // Reads the payload of the record at pos_ (header buffered) into dst: what is buffered, then
  // the rest straight from the stream, with the footer and kLookahead bytes into the buffer.
  void ReadPast(char* dst, uint64_t length, uint64_t offset) {
    Consume(kHeaderSize);
    uint64_t done = std::min<uint64_t>(end_ - pos_, length);
    std::memcpy(dst, buffer_.get() + pos_, done);
    Consume(done);
    if (done < length) pos_ = end_ = 0;  // the buffer is used up; the stream continues
    while (done < length) {
      const size_t want = length - done;
      const size_t room = end_ < kLookahead ? kLookahead - end_ : 0;  // end_ grows only last
      const size_t got = in_->ReadTwo(dst + done, want, buffer_.get() + end_, room);
      if (got == 0) break;
      const size_t to_dst = std::min(got, want);
      done += to_dst;
      end_ += got - to_dst;
      stream_position_ += got;
    }
    const size_t footer = done < length ? 0 : Fill(kFooterSize);
    if (done < length || footer < kFooterSize) {
      ThrowCorrupt(path_, offset, internal::tfrecord::TruncatedDetail(length, done + footer));
    }
    internal::tfrecord::CheckFooter(path_, offset, std::string_view(dst, length),
                                   buffer_.get() + pos_);
    Consume(kFooterSize);
  }

  std::string path_;
  TFRecordCompression compression_;
  std::shared_ptr<const RandomAccessFile> file_;
  std::unique_ptr<internal::tfrecord::InputStream> in_;
  std::unique_ptr<char[]> buffer_;
  size_t pos_ = 0, end_ = 0;        // buffered bytes: [pos_, end_)
  uint64_t stream_position_ = 0;    // stream offset of buffer_[end_]
  std::optional<uint64_t> pending_;  // NextLength()'s result, until the record is read
};

}  // namespace

std::unique_ptr<TFRecordReader> TFRecordReader::Open(
    const std::string& path, std::optional<TFRecordCompression> compression, bool read_ahead,
    const FileSystemPtr& fs) {
  std::shared_ptr<const RandomAccessFile> file = OpenRandomAccessFile(path, fs);
  // The first bytes, for the detection, come in the stream's first window.
  auto reads = std::make_unique<internal::SequentialReads>(*file);
  const TFRecordCompression c =
      compression ? *compression : internal::tfrecord::DetectCompression(*file, reads.get());
  auto reader = std::make_unique<Reader>(std::move(file), c, std::move(reads));
  if (!read_ahead || c == TFRecordCompression::kNone) return reader;
  return internal::tfrecord::MakeReadAheadReader(std::move(reader));
}

}  // namespace spelt
