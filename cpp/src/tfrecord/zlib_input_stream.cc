// The gzip / zlib InputStream (input_stream.h), decompressed with zlib's inflate.
#include <zlib.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "tfrecord/format.h"
#include "tfrecord/input_stream.h"

namespace spelt::internal::tfrecord {
namespace {

constexpr size_t kInputBufferSize = size_t{256} << 10;

class ZlibInputStream final : public InputStream {
 public:
  ZlibInputStream(std::shared_ptr<const RandomAccessFile> file, bool gzip,
                  std::unique_ptr<SequentialReads> reads)
      : file_(std::move(file)),
        reads_(std::move(reads)),
        path_(file_->path()),
        compressed_size_(file_->size()),
        gzip_(gzip),
        in_(kInputBufferSize) {
    if (inflateInit2(&z_, WindowBits()) != Z_OK) {
      throw std::runtime_error(path_ + ": cannot start zlib's inflate");
    }
  }
  ~ZlibInputStream() override { inflateEnd(&z_); }

  size_t Read(char* dst, size_t n) override {
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, uInt{1} << 30));
    const uInt wanted = z_.avail_out;
    while (z_.avail_out == wanted && !ended_) {
      if (z_.avail_in == 0 && !FillInput()) {
        if (member_started_) {
          ThrowCorrupt(path_, file_offset_, Name() + " stream ends early (truncated file?)");
        }
        ended_ = true;  // the file ends exactly after a member (or is empty)
        break;
      }
      member_started_ = true;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // gzip files may hold several members one after the other (as `cat a.gz b.gz`).
        member_started_ = false;
        if (!gzip_) ended_ = true;
        else inflateReset(&z_);
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        ThrowCorrupt(path_, file_offset_ - z_.avail_in,
                     "invalid " + Name() + " data: " + (z_.msg ? z_.msg : "zlib error " +
                                                                           std::to_string(rc)));
      }
    }
    const size_t got = wanted - z_.avail_out;
    position_ += got;
    return got;
  }

  void Seek(uint64_t offset) override {
    if (offset < position_) Rewind();
    std::vector<char> scratch(std::min<uint64_t>(offset - position_, kInputBufferSize));
    while (position_ < offset) {
      if (Read(scratch.data(), std::min<uint64_t>(offset - position_, scratch.size())) == 0) {
        throw std::invalid_argument(path_ + ": cannot seek to offset " + std::to_string(offset) +
                                    ", the decompressed stream has " + std::to_string(position_) +
                                    " bytes");
      }
    }
  }

  // Deflate expands at most 1032:1 (zlib's technical details); headers add a few bytes.
  uint64_t SizeLimit() const override { return compressed_size_ * 1032 + 1024; }

 private:
  int WindowBits() const { return gzip_ ? 16 + MAX_WBITS : MAX_WBITS; }
  std::string Name() const { return gzip_ ? "gzip" : "zlib"; }

  // Reads more compressed bytes; false at the end of the file.
  bool FillInput() {
    const auto got =
        static_cast<size_t>(std::min<uint64_t>(in_.size(), compressed_size_ - file_offset_));
    reads_->Read(file_offset_, in_.data(), got);
    z_.next_in = reinterpret_cast<Bytef*>(in_.data());
    z_.avail_in = static_cast<uInt>(got);
    file_offset_ += got;
    return got > 0;
  }

  void Rewind() {
    inflateReset2(&z_, WindowBits());
    z_.avail_in = 0;
    file_offset_ = 0;
    position_ = 0;
    ended_ = false;
    member_started_ = false;
  }

  std::shared_ptr<const RandomAccessFile> file_;
  std::unique_ptr<SequentialReads> reads_;  // of *file_
  std::string path_;
  uint64_t compressed_size_;  // the file's size when opened
  bool gzip_;
  std::vector<char> in_;
  z_stream z_{};
  uint64_t file_offset_ = 0;  // compressed bytes read from the file
  uint64_t position_ = 0;     // decompressed bytes returned
  bool ended_ = false;
  bool member_started_ = false;  // inside a gzip member / the zlib stream
};

}  // namespace

std::unique_ptr<InputStream> MakeZlibInputStream(std::shared_ptr<const RandomAccessFile> file,
                                                 bool gzip,
                                                 std::unique_ptr<SequentialReads> reads) {
  return std::make_unique<ZlibInputStream>(std::move(file), gzip, std::move(reads));
}

}  // namespace spelt::internal::tfrecord
