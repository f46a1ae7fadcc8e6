// SourceMapDataset: index i reads record i % len(source) (Grain's source.py).
#include <stdexcept>

#include "core/nodes.h"

namespace spelt::internal {
namespace {

class SourceNode final : public MapNode {
 public:
  explicit SourceNode(std::shared_ptr<const RandomAccessSource> source)
      : MapNode({}, source->Serial()), source_(std::move(source)), length_(source_->Length()) {
    if (length_ < 0) throw std::invalid_argument("source: negative length " + source_->Repr());
  }
  std::string Name() const override { return "SourceMapDataset"; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    if (length_ == 0) {
      throw std::out_of_range("index " + std::to_string(index) + " into empty source " +
                              source_->Repr());
    }
    return NoneAsFiltered(source_->Get(index % length_));
  }

 private:
  std::shared_ptr<const RandomAccessSource> source_;
  int64_t length_;
};

}  // namespace

MapNodePtr MakeSourceNode(std::shared_ptr<const RandomAccessSource> source) {
  return std::make_shared<SourceNode>(std::move(source));
}

}  // namespace spelt::internal
