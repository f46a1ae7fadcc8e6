// TFRecordIterDataset (spelt/tfrecord_dataset.h): a source IterNode over TFRecordReader.
#include "sources/tfrecord_dataset.h"

#include <stdexcept>

namespace spelt::internal {
namespace {

constexpr const char* kName = "TFRecordIterDataset";

class TFRecordIterator final : public DatasetIterator {
 public:
  explicit TFRecordIterator(std::unique_ptr<TFRecordReader> reader) : reader_(std::move(reader)) {}

  std::optional<Value> Next() override {
    std::string record;
    if (!reader_->ReadRecord(&record)) return std::nullopt;
    return Value::Bytes(std::move(record));
  }

  State GetState() const override {
    return State{{kReaderOffsetKey, static_cast<int64_t>(reader_->Tell())}};
  }

  void SetState(const State& state) override {
    const int64_t offset = StateInt(state, kReaderOffsetKey, kName);
    if (offset < 0) {
      throw std::invalid_argument(std::string(kName) + ": negative reader_offset " +
                                  std::to_string(offset));
    }
    reader_->Seek(static_cast<uint64_t>(offset));
  }

 private:
  std::unique_ptr<TFRecordReader> reader_;
};

class TFRecordNode final : public IterNode {
 public:
  TFRecordNode(std::string path, std::optional<TFRecordCompression> compression,
               FileSystemPtr fs)
      : IterNode(std::vector<std::shared_ptr<const DatasetNode>>{}),
        path_(std::move(path)),
        compression_(compression),
        fs_(std::move(fs)) {}
  std::string Name() const override { return kName; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return std::make_unique<TFRecordIterator>(
        TFRecordReader::Open(path_, compression_, /*read_ahead=*/true, fs_));
  }

 private:
  std::string path_;
  std::optional<TFRecordCompression> compression_;
  FileSystemPtr fs_;
};

}  // namespace

IterNodePtr MakeTFRecordNode(std::string path, std::optional<TFRecordCompression> compression,
                             FileSystemPtr fs) {
  return std::make_shared<TFRecordNode>(std::move(path), compression, std::move(fs));
}

}  // namespace spelt::internal
