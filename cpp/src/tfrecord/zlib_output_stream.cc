// The gzip / zlib OutputStream (output_stream.h), compressed with zlib's deflate.
#include <zlib.h>

#include <stdexcept>
#include <vector>

#include "tfrecord/output_stream.h"

namespace spelt::internal::tfrecord {
namespace {

constexpr size_t kOutputBufferSize = size_t{256} << 10;

class ZlibOutputStream final : public OutputStream {
 public:
  ZlibOutputStream(std::unique_ptr<io::AppendFile> file, std::string path, bool gzip, int level)
      : file_(std::move(file)), path_(std::move(path)), out_(kOutputBufferSize) {
    if (deflateInit2(&z_, level, Z_DEFLATED, gzip ? 16 + MAX_WBITS : MAX_WBITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error(path_ + ": cannot start zlib's deflate");
    }
  }
  ~ZlibOutputStream() override { deflateEnd(&z_); }

  void Write(std::string_view bytes) override {
    while (!bytes.empty()) {
      const size_t piece = std::min<size_t>(bytes.size(), uInt{1} << 30);
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
      z_.avail_in = static_cast<uInt>(piece);
      Deflate(Z_NO_FLUSH);
      bytes.remove_prefix(piece);
    }
  }

  void Close() override {
    Deflate(Z_FINISH);
    file_->Close();
  }

 private:
  // Runs deflate until it has taken all input (and, for Z_FINISH, ended the stream).
  void Deflate(int flush) {
    for (;;) {
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      const int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) throw std::runtime_error(path_ + ": zlib's deflate failed");
      file_->Append(std::string_view(out_.data(), out_.size() - z_.avail_out));
      if (flush == Z_FINISH ? rc == Z_STREAM_END : z_.avail_in == 0 && z_.avail_out != 0) {
        return;
      }
    }
  }

  std::unique_ptr<io::AppendFile> file_;
  std::string path_;
  std::vector<char> out_;
  z_stream z_{};
};

}  // namespace

std::unique_ptr<OutputStream> MakeZlibOutputStream(std::unique_ptr<io::AppendFile> file,
                                                   std::string path, bool gzip, int level) {
  return std::make_unique<ZlibOutputStream>(std::move(file), std::move(path), gzip, level);
}

}  // namespace spelt::internal::tfrecord
