// TFRecordReader (spelt/tfrecord.h): a buffered reader over an InputStream. Records that fit
// in the buffer are copied out of it once; larger ones are read from the stream straight into
// the record's memory.
#include <cstring>
#include <memory>
#include <vector>

#include "spelt/tfrecord.h"
#include "tfrecord/format.h"
#include "tfrecord/input_stream.h"

namespace spelt {
namespace {

using internal::tfrecord::kFooterSize;
using internal::tfrecord::kHeaderSize;
using internal::tfrecord::ThrowCorrupt;

constexpr size_t kBufferSize = size_t{256} << 10;

class Reader final : public TFRecordReader {
 public:
  Reader(std::string path, TFRecordCompression compression)
      : path_(std::move(path)),
        compression_(compression),
        in_(internal::tfrecord::OpenInputStream(path_, compression)),
        buffer_(new char[kBufferSize]) {}

  bool ReadRecord(std::string* record) override {
    const uint64_t offset = Tell();
    const size_t have = Fill(kHeaderSize);
    if (have == 0) return false;
    if (have < kHeaderSize) {
      ThrowCorrupt(path_, offset, "the file ends inside a record header (truncated?): " +
                                      std::to_string(have) + " of " +
                                      std::to_string(kHeaderSize) + " bytes");
    }
    const std::optional<uint64_t> length = internal::tfrecord::DecodeHeader(buffer_.get() + pos_);
    if (!length) {
      ThrowCorrupt(path_, offset, "the masked CRC32C of the record length does not match");
    }
    if (*length <= kBufferSize - kHeaderSize - kFooterSize) {
      const size_t size = static_cast<size_t>(*length);
      const size_t available = Fill(kHeaderSize + size + kFooterSize) - kHeaderSize;
      if (available < size + kFooterSize) {
        ThrowCorrupt(path_, offset, internal::tfrecord::TruncatedDetail(size, available));
      }
      const char* payload = buffer_.get() + pos_ + kHeaderSize;
      CheckPayload(std::string_view(payload, size), payload + size, offset);
      record->assign(payload, size);
      Consume(kHeaderSize + size + kFooterSize);
      return true;
    }
    ReadLarge(*length, offset, record);
    return true;
  }

  uint64_t Tell() const override { return stream_position_ - (end_ - pos_); }

  void Seek(uint64_t offset) override {
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
      in_ = internal::tfrecord::OpenInputStream(path_, compression_);
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

  void CheckPayload(std::string_view payload, const char* footer, uint64_t offset) {
    if (!internal::tfrecord::FooterMatches(payload, footer)) {
      ThrowCorrupt(path_, offset,
                   "the masked CRC32C of the " + std::to_string(payload.size()) +
                       "-byte payload does not match (the record's data is corrupt)");
    }
  }

  // A record larger than the buffer: what is buffered, then the rest straight from the stream.
  // The record grows as its bytes arrive (by doubling, when the stream's size is unknown), so
  // a corrupt length that passed its CRC cannot allocate more than the file holds.
  // On an error the reader is put back at the record, so that Tell() names it.
  void ReadLarge(uint64_t length, uint64_t offset, std::string* record) {
    try {
      const std::optional<uint64_t> size = in_->Size();
      if (size) {
        const uint64_t after_header = *size - offset - kHeaderSize;  // header read: >= 0
        if (length > after_header || after_header - length < kFooterSize) {
          ThrowCorrupt(path_, offset, internal::tfrecord::TruncatedDetail(length, after_header));
        }
      }
      Consume(kHeaderSize);
      uint64_t done = std::min<uint64_t>(end_ - pos_, length);
      record->resize(size ? length : std::min(length, std::max<uint64_t>(2 * done, kBufferSize)));
      std::memcpy(record->data(), buffer_.get() + pos_, done);
      Consume(done);
      if (done < length) pos_ = end_ = 0;  // the buffer is used up; the stream continues
      while (done < length) {
        if (done == record->size()) record->resize(std::min(length, 2 * done));
        const size_t got = in_->Read(record->data() + done, record->size() - done);
        if (got == 0) break;
        done += got;
        stream_position_ += got;
      }
      const size_t footer = done < length ? 0 : Fill(kFooterSize);
      if (done < length || footer < kFooterSize) {
        ThrowCorrupt(path_, offset, internal::tfrecord::TruncatedDetail(length, done + footer));
      }
      CheckPayload(*record, buffer_.get() + pos_, offset);
      Consume(kFooterSize);
    } catch (...) {
      Seek(offset);
      throw;
    }
  }

  std::string path_;
  TFRecordCompression compression_;
  std::unique_ptr<internal::tfrecord::InputStream> in_;
  std::unique_ptr<char[]> buffer_;
  size_t pos_ = 0, end_ = 0;       // buffered bytes: [pos_, end_)
  uint64_t stream_position_ = 0;  // stream offset of buffer_[end_]
};

}  // namespace

std::unique_ptr<TFRecordReader> TFRecordReader::Open(
    const std::string& path, std::optional<TFRecordCompression> compression) {
  return std::make_unique<Reader>(path, compression ? *compression
                                                    : DetectTFRecordCompression(path));
}

}  // namespace spelt
