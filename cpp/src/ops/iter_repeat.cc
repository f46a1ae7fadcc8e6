// RepeatIterDataset: the parent stream num_epochs times (forever if none); each epoch restarts
// the parent from the state it had when the iterator was made, so every epoch is identical
// (Grain's repeat.py: no reseeding). State: {"parent": parent state, "epoch": e}.
// An empty parent ends the stream instead of looping forever.
#include "ops/iter_repeat.h"

#include "core/iter_op_node.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "RepeatIterDataset";
// State key besides kParentKey (Grain's RepeatIterDataset): the epochs completed.
constexpr char kEpochKey[] = "epoch";

class RepeatIterator final : public DatasetIterator {
 public:
  RepeatIterator(std::unique_ptr<DatasetIterator> parent, std::optional<int64_t> num_epochs)
      : parent_(std::move(parent)), num_epochs_(num_epochs), start_(parent_->GetState()) {}
  std::optional<Value> Next() override {
    if (num_epochs_ && epoch_ >= *num_epochs_) return std::nullopt;
    bool restarted_empty = false;
    while (true) {
      std::optional<Value> v = parent_->Next();
      if (v) return v;
      if (restarted_empty) {  // an epoch with no elements, so are all: stop after the last
        if (num_epochs_) epoch_ = *num_epochs_;  // as Grain's state counts through them
        return std::nullopt;
      }
      ++epoch_;
      if (num_epochs_ && epoch_ >= *num_epochs_) return std::nullopt;
      parent_->SetState(start_);
      restarted_empty = true;
    }
  }
  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    return State{{kParentKey, parent_->GetState()}, {kEpochKey, epoch_}};
  }
  void SetState(const State& state) override {
    const int64_t epoch = StateInt(state, kEpochKey, kName);
    if (epoch < 0) throw std::invalid_argument(std::string(kName) + ": negative epoch");
    parent_->SetState(StateField(state, kParentKey, kName));
    epoch_ = epoch;
  }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  std::optional<int64_t> num_epochs_;
  State start_;
  int64_t epoch_ = 0;
};

}  // namespace

IterNodePtr MakeIterRepeatNode(IterNodePtr parent, std::optional<int64_t> num_epochs) {
  return std::make_shared<IterOpNode>(std::move(parent), kName, [num_epochs](auto p) {
    return std::make_unique<RepeatIterator>(std::move(p), num_epochs);
  });
}

}  // namespace spelt::internal
