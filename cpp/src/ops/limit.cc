// LimitIterDataset: the first `count` elements of the parent stream (Grain's limit.py).
// State: {"parent": parent state, "count_elements_read": n}. Past the limit the parent is not
// read again. Next index (Grain's): n.
#include "ops/limit.h"

#include "core/iter_op_node.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "LimitIterDataset";
constexpr char kCountKey[] = "count_elements_read";

class LimitIterator final : public DatasetIterator {
 public:
  LimitIterator(std::unique_ptr<DatasetIterator> parent, int64_t count)
      : parent_(std::move(parent)), count_(count) {}
  std::optional<Value> Next() override {
    if (read_ >= count_) return std::nullopt;
    std::optional<Value> v = parent_->Next();
    if (v) ++read_;
    return v;
  }
  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    return State{{kParentKey, parent_->GetState()}, {kCountKey, read_}};
  }
  void SetState(const State& state) override {
    const int64_t n = StateInt(state, kCountKey, kName);
    if (n < 0) throw std::invalid_argument(std::string(kName) + ": negative count_elements_read");
    parent_->SetState(StateField(state, kParentKey, kName));
    read_ = n;
  }
  int64_t NextIndexOf(const State& state) const override {
    return StateInt(state, kCountKey, kName);
  }
  State StateAtIndex(int64_t index, const State& state) const override {
    return CountedStateAt(*parent_, index, state, kCountKey, kName);
  }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  int64_t count_;
  int64_t read_ = 0;
};

}  // namespace

IterNodePtr MakeLimitNode(IterNodePtr parent, int64_t count) {
  return std::make_shared<IterOpNode>(std::move(parent), kName, [count](auto p) {
    return std::make_unique<LimitIterator>(std::move(p), count);
  });
}

}  // namespace spelt::internal
