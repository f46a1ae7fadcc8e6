// SourceMapDataset: index i reads record i % len(source) (Grain's source.py).
#include <stdexcept>

#include "ops/source_dataset.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class SourceNode final : public MapNode {
 public:
  explicit SourceNode(std::shared_ptr<const RandomAccessSource> source)
      : MapNode({}, source->CallsPython()), source_(std::move(source)),
        length_(source_->Length()) {
    if (length_ < 0) throw std::invalid_argument("source: negative length " + source_->Repr());
  }
  std::string Name() const override { return "SourceMapDataset"; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    return NoneAsFiltered(source_->Get(RecordIndex(index)));
  }
  std::optional<Value> GetStacked(std::span<const int64_t> indices) const override {
    std::vector<int64_t> records(indices.size());
    for (size_t i = 0; i < indices.size(); ++i) records[i] = RecordIndex(indices[i]);
    return source_->GetStacked(records);
  }
  // One RandomAccessSource::GetMany for all the indices.
  void GetMany(std::span<const int64_t> indices, Elements* out) const override {
    auto [records, error] = MapIndices(indices, [this](int64_t i) { return RecordIndex(i); });
    std::vector<Value> got;
    got.reserve(records.size());
    // (records captured by name: clang 14 cannot capture a structured binding)
    const std::exception_ptr read_error =
        Capture([&, &records = records] { source_->GetMany(records, &got); });
    out->reserve(out->size() + got.size());
    for (Value& v : got) out->push_back(NoneAsFiltered(std::move(v)));
    if (read_error) std::rethrow_exception(read_error);
    if (error) std::rethrow_exception(error);
  }

 private:
  int64_t RecordIndex(int64_t index) const {
    if (length_ == 0) {
      throw std::out_of_range("index " + std::to_string(index) + " into empty source " +
                              source_->Repr());
    }
    return index % length_;
  }

  std::shared_ptr<const RandomAccessSource> source_;
  int64_t length_;
};

}  // namespace

MapNodePtr MakeSourceNode(std::shared_ptr<const RandomAccessSource> source) {
  return std::make_shared<SourceNode>(std::move(source));
}

}  // namespace spelt::internal
