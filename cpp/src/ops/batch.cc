// BatchMapDataset and BatchIterDataset: groups of batch_size consecutive elements combined by
// the batch function (default: Stack). MapDataset batches never span epochs: batch j of
// epoch e covers parent indices [e*L + j*B, e*L + min(L, (j+1)*B)) (Grain's batch.py).
// The iterator's state is its parent's state after the batch's last element.
// BatchMapDataset reads the elements of all the batches of a chunk with one parent GetMany.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "ops/batch.h"
#include "ops/get_many.h"
#include "spelt/stack.h"

namespace spelt::internal {
namespace {

BatchFn OrStack(BatchFn fn) {
  if (fn) return fn;
  return [](std::vector<Value> elements) { return Stack(elements); };
}

class BatchMapNode final : public MapNode {
 public:
  BatchMapNode(MapNodePtr parent, int64_t batch_size, bool drop_remainder, BatchFn fn,
               BatchNones nones)
      : MapNode({parent}), parent_(std::move(parent)), batch_size_(batch_size),
        parent_length_(parent_->Length()), stacks_(!fn), nones_(std::move(nones)),
        fn_(OrStack(std::move(fn))) {
    if (parent_length_ == kInfiniteLength) {
      length_ = kInfiniteLength / batch_size_;  // Grain: sys.maxsize // batch_size
    } else if (drop_remainder) {
      length_ = parent_length_ / batch_size_;
    } else {
      length_ = parent_length_ / batch_size_ + (parent_length_ % batch_size_ != 0);
    }
  }
  std::string Name() const override { return "BatchMapDataset"; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    if (stacks_) {
      if (std::optional<Value> batch = GatherStacked(index)) return batch;
    }
    const auto [begin, end] = ParentRange(index);
    Elements got;
    got.reserve(static_cast<size_t>(end - begin));
    for (int64_t i = begin; i < end; ++i) got.push_back(parent_->Get(i));
    return Combine(got);
  }
  void GetMany(std::span<const int64_t> indices, Elements* out) const override {
    // Batches the parent gathers straight into one array (see MapNode::GetStacked) first; the
    // first that it cannot gather, and all after it, go through GetMany() and the batch fn.
    if (stacks_) {
      while (!indices.empty()) {
        std::optional<Value> batch = GatherStacked(indices.front());
        if (!batch) break;
        out->push_back(std::move(batch));
        indices = indices.subspan(1);
      }
      if (indices.empty()) return;
    }
    auto [ranges, error] = MapIndices(indices, [this](int64_t i) { return ParentRange(i); });
    std::vector<int64_t> parent_indices;
    for (const auto& [begin, end] : ranges) {
      for (int64_t i = begin; i < end; ++i) parent_indices.push_back(i);
    }
    Elements got;
    got.reserve(parent_indices.size());
    const std::exception_ptr read_error = Capture([&] { parent_->GetMany(parent_indices, &got); });
    // Batches whose elements all arrived, in order; the first incomplete one failed.
    size_t next = 0;
    for (const auto& [begin, end] : ranges) {
      const auto size = static_cast<size_t>(end - begin);
      if (got.size() - next < size) std::rethrow_exception(read_error);
      out->push_back(Combine(std::span(got).subspan(next, size)));
      next += size;
    }
    if (error) std::rethrow_exception(error);
  }

 private:
  // Batch `index` gathered by the parent, or nullopt (it cannot, or that batch would fail:
  // GetMany() then raises the error as Get() would).
  std::optional<Value> GatherStacked(int64_t index) const {
    try {
      const auto [begin, end] = ParentRange(index);
      if (begin == end) return std::nullopt;
      std::vector<int64_t> range(static_cast<size_t>(end - begin));
      std::iota(range.begin(), range.end(), begin);
      return parent_->GetStacked(range);
    } catch (...) {
      return std::nullopt;
    }
  }
  // Parent indices [begin, end) of batch `index`.
  std::pair<int64_t, int64_t> ParentRange(int64_t index) const {
    if (parent_length_ == kInfiniteLength) {
      return {index * batch_size_, (index + 1) * batch_size_};
    }
    if (length_ == 0) throw std::out_of_range("batch: index into an empty dataset");
    const int64_t epoch = index / length_, j = index % length_;
    return {epoch * parent_length_ + j * batch_size_,
            epoch * parent_length_ + std::min(parent_length_, (j + 1) * batch_size_)};
  }
  // The batch of a range's elements. An element that is None (a source or map returned it; a
  // filter cannot be below a batch) is a None leaf of the batch, as Grain's batch stacks it
  // (without jax; spelt/stack.h), unless nones_ says otherwise.
  Value Combine(std::span<std::optional<Value>> got) const {
    std::vector<Value> elements;
    elements.reserve(got.size());
    for (std::optional<Value>& v : got) {
      if (!v && nones_.raise) {
        throw std::invalid_argument("batch: element " + std::to_string(elements.size()) +
                                    " of a batch is None");
      }
      const bool none = !v || (nones_.is_marker && nones_.is_marker(*v));
      elements.push_back(none ? Value() : std::move(*v));
    }
    return fn_(std::move(elements));
  }

  MapNodePtr parent_;
  int64_t batch_size_, parent_length_, length_;
  bool stacks_;       // the batch function is the default, Stack()
  BatchNones nones_;
  BatchFn fn_;
};

// Batches of the parent's elements. An error of the parent passes through without losing the
// elements already taken for the batch: they stay pending, the next Next() continues the
// batch after the failing element, and GetState() is the state before the first pending
// element (so a restore re-reads them), as every buffering op does (docs/workers.md).
class BatchIterator final : public DatasetIterator {
 public:
  BatchIterator(std::unique_ptr<DatasetIterator> parent, int64_t batch_size, bool drop_remainder,
                BatchFn fn)
      : parent_(std::move(parent)), batch_size_(batch_size), drop_remainder_(drop_remainder),
        fn_(std::move(fn)) {}
  std::optional<Value> Next() override {
    if (pending_.empty()) {
      // At most 4096 ahead: a batch size beyond any stream (batch(2**63) takes everything)
      // must not reserve it.
      pending_.reserve(static_cast<size_t>(std::min<int64_t>(batch_size_, 4096)));
      pending_start_ = parent_->GetState();
    }
    while (static_cast<int64_t>(pending_.size()) < batch_size_) {
      std::optional<Value> v = parent_->Next();  // an error leaves pending_ as it is
      if (!v) break;
      pending_.push_back(std::move(*v));
    }
    std::vector<Value> elements = std::move(pending_);
    pending_.clear();
    if (elements.empty()) return std::nullopt;
    if (drop_remainder_ && static_cast<int64_t>(elements.size()) < batch_size_) {
      return std::nullopt;
    }
    return fn_(std::move(elements));
  }
  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    return pending_.empty() ? parent_->GetState() : pending_start_;
  }
  void SetState(const State& state) override {
    pending_.clear();
    parent_->SetState(state);
  }
  // The state is the parent's, so is its index, in parent elements.
  int64_t NextIndexOf(const State& state) const override {
    return BatchesBefore(parent_->NextIndexOf(state), batch_size_);
  }
  State StateAtIndex(int64_t index, const State& state) const override {
    return parent_->StateAtIndex(FirstOfBatch(index, batch_size_), state);
  }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  int64_t batch_size_;
  bool drop_remainder_;
  BatchFn fn_;
  std::vector<Value> pending_;  // taken for the next batch when an error interrupted it
  State pending_start_;         // the parent's state before pending_[0]
};

class BatchIterNode final : public IterNode {
 public:
  BatchIterNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder, BatchFn fn)
      : IterNode({parent}), parent_(std::move(parent)), batch_size_(batch_size),
        drop_remainder_(drop_remainder), stacks_(!fn), fn_(OrStack(std::move(fn))) {}
  std::string Name() const override { return "BatchIterDataset"; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    auto elementwise = [parent = parent_, batch_size = batch_size_,
                        drop_remainder = drop_remainder_, fn = fn_] {
      return std::make_unique<BatchIterator>(parent->MakeIterator(), batch_size, drop_remainder,
                                             fn);
    };
    if (stacks_) {
      const BatchRequest request{batch_size_, drop_remainder_, nullptr};
      if (auto batched = parent_->MakeBatchIterator(request, elementwise)) {
        return batched;
      }
    }
    return elementwise();
  }

 private:
  IterNodePtr parent_;
  int64_t batch_size_;
  bool drop_remainder_;
  bool stacks_;  // the batch function is the default, Stack()
  BatchFn fn_;
};

}  // namespace

int64_t BatchesBefore(int64_t parent_index, int64_t batch_size) {
  return parent_index / batch_size + (parent_index % batch_size > 0 ? 1 : 0);
}

int64_t FirstOfBatch(int64_t index, int64_t batch_size) {
  int64_t first = 0;
  if (__builtin_mul_overflow(index, batch_size, &first)) {
    throw std::out_of_range("set_next_index: batch " + std::to_string(index) + " of " +
                            std::to_string(batch_size) + " elements starts beyond 2**63 - 1");
  }
  return first;
}

MapNodePtr MakeBatchMapNode(MapNodePtr parent, int64_t batch_size, bool drop_remainder,
                            BatchFn fn, BatchNones nones) {
  return std::make_shared<BatchMapNode>(std::move(parent), batch_size, drop_remainder,
                                        std::move(fn), std::move(nones));
}

IterNodePtr MakeBatchIterNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder,
                              BatchFn fn) {
  return std::make_shared<BatchIterNode>(std::move(parent), batch_size, drop_remainder,
                                         std::move(fn));
}

}  // namespace spelt::internal
