// The uncompressed InputStream (reads at a position of the file, a remote one in large windows:
// io/sequential_reads.h; the reader buffers) and
// OpenInputStream.
#include "tfrecord/input_stream.h"

#include <algorithm>
#include <stdexcept>
#include <utility>


namespace spelt::internal::tfrecord {
namespace {

class FileInputStream final : public InputStream {
 public:
  FileInputStream(std::shared_ptr<const RandomAccessFile> file,
                  std::unique_ptr<SequentialReads> reads)
      : file_(std::move(file)), reads_(std::move(reads)), size_(file_->size()) {}

  size_t Read(char* dst, size_t n) override {
    n = Clip(n);
    reads_->Read(position_, dst, n);
    position_ += n;
    return n;
  }

  void Seek(uint64_t offset) override {
    if (offset > size_) {
      throw std::invalid_argument(file_->path() + ": cannot seek to offset " +
                                  std::to_string(offset) + ", the file has " +
                                  std::to_string(size_) + " bytes");
    }
    position_ = offset;
  }

  size_t ReadTwo(char* dst, size_t n, char* more, size_t m) override {
    if (file_->HighLatency()) return InputStream::ReadTwo(dst, n, more, m);  // from the window
    n = Clip(n);
    m = n == 0 ? 0 : std::min<uint64_t>(m, size_ - position_ - n);
    const ReadRequest requests[2] = {{position_, n, dst}, {position_ + n, m, more}};
    file_->ReadMany(requests);
    position_ += n + m;
    return n + m;
  }

  // The size when opened (the file is read up to that size).
  uint64_t SizeLimit() const override { return size_; }

 private:
  size_t Clip(size_t n) const { return static_cast<size_t>(std::min<uint64_t>(n, size_ - position_)); }

  std::shared_ptr<const RandomAccessFile> file_;
  std::unique_ptr<SequentialReads> reads_;  // of *file_
  uint64_t size_;
  uint64_t position_ = 0;
};

}  // namespace

size_t InputStream::ReadTwo(char* dst, size_t n, char* more, size_t m) {
  const size_t got = Read(dst, n);
  return got < n ? got : got + Read(more, m);
}

std::unique_ptr<InputStream> OpenInputStream(std::shared_ptr<const RandomAccessFile> file,
                                             TFRecordCompression compression,
                                             std::unique_ptr<SequentialReads> reads) {
  if (reads == nullptr) reads = std::make_unique<SequentialReads>(*file);
  if (compression == TFRecordCompression::kNone) {
    return std::make_unique<FileInputStream>(std::move(file), std::move(reads));
  }
  return MakeZlibInputStream(std::move(file), compression == TFRecordCompression::kGzip,
                             std::move(reads));
}

}  // namespace spelt::internal::tfrecord
