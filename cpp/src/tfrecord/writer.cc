// TFRecordWriter (spelt/tfrecord.h): frames each record and hands it to an OutputStream.
#include <stdexcept>

#include "spelt/tfrecord.h"
#include "tfrecord/format.h"
#include "tfrecord/output_stream.h"

namespace spelt {
namespace {

using internal::tfrecord::kFooterSize;
using internal::tfrecord::kHeaderSize;

class Writer final : public TFRecordWriter {
 public:
  Writer(std::string path, TFRecordCompression compression, int level, const FileSystemPtr& fs)
      : path_(std::move(path)),
        out_(internal::tfrecord::OpenOutputStream(path_, compression, level, fs)) {}

  void Write(std::string_view record) override {
    if (!out_) throw std::logic_error("TFRecordWriter: write after close of " + path_);
    char header[kHeaderSize], footer[kFooterSize];
    internal::tfrecord::EncodeHeader(record.size(), header);
    internal::tfrecord::EncodeFooter(record, footer);
    out_->Write(std::string_view(header, kHeaderSize));
    out_->Write(record);
    out_->Write(std::string_view(footer, kFooterSize));
    ++num_records_;
  }

  void Close() override {
    if (!out_) return;
    const auto out = std::move(out_);
    out->Close();
  }

  uint64_t NumRecords() const override { return num_records_; }

 private:
  std::string path_;
  std::unique_ptr<internal::tfrecord::OutputStream> out_;
  uint64_t num_records_ = 0;
};

}  // namespace

std::unique_ptr<TFRecordWriter> TFRecordWriter::Open(const std::string& path,
                                                     TFRecordCompression compression,
                                                     int level, const FileSystemPtr& fs) {
  return std::make_unique<Writer>(path, compression, level, fs);
}

}  // namespace spelt
