// FlatMapIterDataset: each parent element becomes zero or more elements (Grain's flatmap.py).
// State: {"parent": parent state before the element being split, "next_index_in_buffer": k};
// restoring re-reads that one element and skips its first k outputs.
#include "ops/iter_flat_map.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "FlatMapIterDataset";
// State key besides kParentKey (Grain's FlatMapIterDataset): the outputs of the parent's last
// element already returned.
constexpr char kNextIndexInBufferKey[] = "next_index_in_buffer";

class IterFlatMapIterator final : public DatasetIterator {
 public:
  IterFlatMapIterator(std::unique_ptr<DatasetIterator> parent, FlatMapFn fn)
      : parent_(std::move(parent)), fn_(std::move(fn)), last_parent_state_(parent_->GetState()) {}

  std::optional<Value> Next() override {
    while (next_in_buffer_ >= buffer_.size()) {
      last_parent_state_ = parent_->GetState();
      std::optional<Value> v = parent_->Next();
      if (!v) return std::nullopt;
      next_in_buffer_ = 0;
      buffer_.clear();
      buffer_ = fn_(std::move(*v));
    }
    return std::move(buffer_[next_in_buffer_++]);
  }

  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    return State{{kParentKey, last_parent_state_},
                 {kNextIndexInBufferKey, static_cast<int64_t>(next_in_buffer_)}};
  }

  void SetState(const State& state) override {
    const int64_t k = StateInt(state, kNextIndexInBufferKey, kName);
    if (k < 0) throw std::invalid_argument(std::string(kName) + ": negative next_index_in_buffer");
    const State& parent_state = StateField(state, kParentKey, kName);
    parent_->SetState(parent_state);
    last_parent_state_ = parent_state;
    buffer_.clear();
    next_in_buffer_ = 0;
    if (k == 0) return;
    std::optional<Value> v = parent_->Next();
    if (!v) return;
    buffer_ = fn_(std::move(*v));
    next_in_buffer_ = static_cast<size_t>(k);
  }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  FlatMapFn fn_;
  State last_parent_state_;
  std::vector<Value> buffer_;
  size_t next_in_buffer_ = 0;
};

class IterFlatMapNode final : public IterNode {
 public:
  IterFlatMapNode(IterNodePtr parent, FlatMapFn fn)
      : IterNode({parent}), parent_(std::move(parent)), fn_(std::move(fn)) {}
  std::string Name() const override { return kName; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return std::make_unique<IterFlatMapIterator>(parent_->MakeIterator(), fn_);
  }

 private:
  IterNodePtr parent_;
  FlatMapFn fn_;
};

}  // namespace

IterNodePtr MakeIterFlatMapNode(IterNodePtr parent, FlatMapFn fn) {
  return std::make_shared<IterFlatMapNode>(std::move(parent), std::move(fn));
}

}  // namespace spelt::internal
