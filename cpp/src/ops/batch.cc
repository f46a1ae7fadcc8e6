// BatchMapDataset and BatchIterDataset: groups of batch_size consecutive elements combined by
// the batch function (default: Stack). MapDataset batches never span epochs: batch j of
// epoch e covers parent indices [e*L + j*B, e*L + min(L, (j+1)*B)) (Grain's batch.py).
// The iterator's state is its parent's state after the batch's last element.
#include <algorithm>

#include "core/nodes.h"
#include "spelt/stack.h"

namespace spelt::internal {
namespace {

BatchFn OrStack(BatchFn fn) {
  if (fn) return fn;
  return [](std::vector<Value> elements) { return Stack(elements); };
}

class BatchMapNode final : public MapNode {
 public:
  BatchMapNode(MapNodePtr parent, int64_t batch_size, bool drop_remainder, BatchFn fn)
      : MapNode({parent}), parent_(std::move(parent)), batch_size_(batch_size),
        parent_length_(parent_->Length()), fn_(OrStack(std::move(fn))) {
    if (parent_length_ == kInfiniteLength) {
      length_ = kInfiniteLength;
    } else if (drop_remainder) {
      length_ = parent_length_ / batch_size_;
    } else {
      length_ = (parent_length_ + batch_size_ - 1) / batch_size_;
    }
  }
  std::string Name() const override { return "BatchMapDataset"; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    int64_t begin, end;
    if (length_ == kInfiniteLength) {
      begin = index * batch_size_;
      end = begin + batch_size_;
    } else {
      if (length_ == 0) throw std::out_of_range("batch: index into an empty dataset");
      const int64_t epoch = index / length_, j = index % length_;
      begin = epoch * parent_length_ + j * batch_size_;
      end = epoch * parent_length_ + std::min(parent_length_, (j + 1) * batch_size_);
    }
    std::vector<Value> elements;
    elements.reserve(static_cast<size_t>(end - begin));
    for (int64_t i = begin; i < end; ++i) {
      if (std::optional<Value> v = parent_->Get(i)) elements.push_back(std::move(*v));
    }
    if (elements.empty()) return std::nullopt;
    return fn_(std::move(elements));
  }

 private:
  MapNodePtr parent_;
  int64_t batch_size_, parent_length_, length_;
  BatchFn fn_;
};

class BatchIterator final : public DatasetIterator {
 public:
  BatchIterator(std::unique_ptr<DatasetIterator> parent, int64_t batch_size, bool drop_remainder,
                BatchFn fn)
      : parent_(std::move(parent)), batch_size_(batch_size), drop_remainder_(drop_remainder),
        fn_(std::move(fn)) {}
  std::optional<Value> Next() override {
    std::vector<Value> elements;
    elements.reserve(static_cast<size_t>(batch_size_));
    while (static_cast<int64_t>(elements.size()) < batch_size_) {
      std::optional<Value> v = parent_->Next();
      if (!v) break;
      elements.push_back(std::move(*v));
    }
    if (elements.empty()) return std::nullopt;
    if (drop_remainder_ && static_cast<int64_t>(elements.size()) < batch_size_) {
      return std::nullopt;
    }
    return fn_(std::move(elements));
  }
  State GetState() const override { return parent_->GetState(); }
  void SetState(const State& state) override { parent_->SetState(state); }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  int64_t batch_size_;
  bool drop_remainder_;
  BatchFn fn_;
};

class BatchIterNode final : public IterNode {
 public:
  BatchIterNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder, BatchFn fn)
      : IterNode({parent}), parent_(std::move(parent)), batch_size_(batch_size),
        drop_remainder_(drop_remainder), fn_(OrStack(std::move(fn))) {}
  std::string Name() const override { return "BatchIterDataset"; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return std::make_unique<BatchIterator>(parent_->MakeIterator(), batch_size_, drop_remainder_,
                                           fn_);
  }

 private:
  IterNodePtr parent_;
  int64_t batch_size_;
  bool drop_remainder_;
  BatchFn fn_;
};

}  // namespace

MapNodePtr MakeBatchMapNode(MapNodePtr parent, int64_t batch_size, bool drop_remainder,
                            BatchFn fn) {
  return std::make_shared<BatchMapNode>(std::move(parent), batch_size, drop_remainder,
                                        std::move(fn));
}

IterNodePtr MakeBatchIterNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder,
                              BatchFn fn) {
  return std::make_shared<BatchIterNode>(std::move(parent), batch_size, drop_remainder,
                                         std::move(fn));
}

}  // namespace spelt::internal
