// RepeatMapDataset: num_epochs copies of the parent (infinite if none). With
// reseed_each_epoch the parent sees global indices (later epochs reshuffle); without it every
// epoch replays epoch 0 (Grain's repeat.py). An empty parent gives an empty dataset.
#include <stdexcept>

#include "ops/repeat.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class RepeatNode final : public IndexMapNode {
 public:
  RepeatNode(MapNodePtr parent, std::optional<int64_t> num_epochs, bool reseed_each_epoch)
      : IndexMapNode(std::move(parent)), reseed_(reseed_each_epoch),
        parent_length_(this->parent()->Length()) {
    if (parent_length_ == 0) {
      length_ = 0;  // an empty dataset repeated stays empty (Grain's repeat.py)
    } else if (!num_epochs) {
      length_ = kInfiniteLength;
    } else if (*num_epochs > kInfiniteLength / parent_length_) {
      length_ = kInfiniteLength;
    } else {
      length_ = *num_epochs * parent_length_;
    }
  }
  std::string Name() const override { return "RepeatMapDataset"; }
  int64_t Length() const override { return length_; }

 private:
  int64_t ParentIndex(int64_t index) const override {
    if (parent_length_ == 0) throw std::out_of_range("repeat: index into an empty dataset");
    return reseed_ ? index : index % parent_length_;
  }

  bool reseed_;
  int64_t parent_length_, length_;
};

}  // namespace

MapNodePtr MakeRepeatNode(MapNodePtr parent, std::optional<int64_t> num_epochs,
                          bool reseed_each_epoch) {
  return std::make_shared<RepeatNode>(std::move(parent), num_epochs, reseed_each_epoch);
}

}  // namespace spelt::internal
