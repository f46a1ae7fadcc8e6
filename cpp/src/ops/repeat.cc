// RepeatMapDataset: num_epochs copies of the parent (infinite if none). With
// reseed_each_epoch the parent sees global indices (later epochs reshuffle); without it every
// epoch replays epoch 0 (Grain's repeat.py).
#include <stdexcept>

#include "core/nodes.h"

namespace spelt::internal {
namespace {

class RepeatNode final : public MapNode {
 public:
  RepeatNode(MapNodePtr parent, std::optional<int64_t> num_epochs, bool reseed_each_epoch)
      : MapNode({parent}), parent_(std::move(parent)), reseed_(reseed_each_epoch),
        parent_length_(parent_->Length()) {
    if (!num_epochs) {
      length_ = kInfiniteLength;
    } else if (parent_length_ != 0 && *num_epochs > kInfiniteLength / parent_length_) {
      length_ = kInfiniteLength;
    } else {
      length_ = *num_epochs * parent_length_;
    }
  }
  std::string Name() const override { return "RepeatMapDataset"; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    if (parent_length_ == 0) throw std::out_of_range("repeat: index into an empty dataset");
    if (!reseed_) index %= parent_length_;
    return parent_->Get(index);
  }

 private:
  MapNodePtr parent_;
  bool reseed_;
  int64_t parent_length_, length_;
};

}  // namespace

MapNodePtr MakeRepeatNode(MapNodePtr parent, std::optional<int64_t> num_epochs,
                          bool reseed_each_epoch) {
  return std::make_shared<RepeatNode>(std::move(parent), num_epochs, reseed_each_epoch);
}

}  // namespace spelt::internal
