// RebatchIterDataset: the parent's batches (trees of arrays with a common leading batch
// dimension) cut and joined into batches of `batch_size` rows (Grain 0.2.18's rebatch.py). A
// batch that lies inside one parent batch is a zero-copy view of it; one that spans several is
// a new array per leaf, of numpy's np.concatenate dtype (ResultType). The last batch is
// partial unless drop_remainder. The tree structure is that of the first parent batch.
//
// State (Grain's): {"parent": parent state before the parent batch being cut, "batch_idx": k},
// k the rows of that batch already handed out; restoring re-reads that one parent batch.
// Where k is all of its rows, Grain adds an empty piece to the next batch, and at the end of
// the stream returns it as an extra empty batch; Spelt reads on (docs/compatibility.md).
#include "ops/rebatch.h"

#include <cstring>

#include "core/iter_op_node.h"
#include "ops/pack_buffers.h"
#include "spelt/stack.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "RebatchIterDataset";
// State key besides kParentKey (Grain's RebatchIterDataset): rows of the parent batch being
// cut already returned.
constexpr char kBatchIdxKey[] = "batch_idx";

std::string LeafName(const LeafPath& path) {
  return path.empty() ? std::string("the element") : "leaf '" + PathName(path) + "'";
}

// Rows [begin, end) of `a` along axis 0, sharing its buffer.
Array RowRange(const Array& a, int64_t begin, int64_t end) {
  Array out = a;
  out.shape[0] = end - begin;
  const size_t row_bytes = a.shape[0] == 0 ? 0 : a.nbytes() / static_cast<size_t>(a.shape[0]);
  out.data = a.data + static_cast<size_t>(begin) * row_bytes;
  return out;
}

// np.concatenate(pieces, axis=0): the piece itself if there is one. Throws
// std::invalid_argument naming the leaf if the trailing dimensions differ.
Array Concatenate(const std::vector<Array>& pieces, const LeafPath& path) {
  if (pieces.size() == 1) return pieces[0];
  std::vector<DType> dtypes;
  int64_t rows = 0;
  for (const Array& p : pieces) {
    if (!std::equal(p.shape.begin() + 1, p.shape.end(), pieces[0].shape.begin() + 1,
                    pieces[0].shape.end())) {
      throw std::invalid_argument(std::string(kName) + ": " + LeafName(path) +
                                  ": cannot concatenate " + pieces[0].Describe() + " with " +
                                  p.Describe());
    }
    dtypes.push_back(p.dtype);
    rows += p.shape[0];
  }
  std::vector<int64_t> shape = pieces[0].shape;
  shape[0] = rows;
  Array out = Array::AllocateUninitialized(ResultType(dtypes), std::move(shape));
  std::byte* dst = out.mutable_data();
  for (const Array& p : pieces) {
    const auto count = static_cast<size_t>(p.num_elements());
    if (p.dtype == out.dtype) {
      if (count != 0) std::memcpy(dst, p.data, p.nbytes());
    } else {
      CastElements(p.dtype, p.data, out.dtype, dst, count);
    }
    dst += count * ItemSize(out.dtype);
  }
  return out;
}

class RebatchIterator final : public DatasetIterator {
 public:
  RebatchIterator(std::unique_ptr<DatasetIterator> parent, int64_t batch_size,
                  bool drop_remainder)
      : parent_(std::move(parent)), batch_size_(batch_size), drop_remainder_(drop_remainder),
        last_parent_state_(parent_->GetState()) {}

  std::optional<Value> Next() override {
    // After an error of the parent, the rows taken for this batch are kept (pieces_) and the
    // batch is completed from there; the state stays the one before them.
    if (pending_rows_ == 0) pending_start_ = GetState();
    while (pending_rows_ < batch_size_) {
      const int64_t needed = batch_size_ - pending_rows_;
      if (!current_ || batch_idx_ >= Rows()) {
        const bool first_after_start = !current_;  // keeps a restored batch_idx
        last_parent_state_ = parent_->GetState();
        std::optional<Value> v = parent_->Next();
        if (!v) {
          if (drop_remainder_) {
            pieces_.clear();
            pending_rows_ = 0;
            return std::nullopt;
          }
          break;
        }
        current_ = Leaves(v->Unpacked());
        if (!first_after_start) batch_idx_ = 0;
      }
      const int64_t rows = Rows();
      if (rows <= 0) {  // Grain's message
        throw std::invalid_argument("Rebatching with starting batch size of 0 is not supported.");
      }
      const int64_t take = std::min(needed, rows - batch_idx_);
      if (take <= 0) continue;  // a restored batch already used up: read the next one
      pieces_.resize(current_->size());
      for (size_t i = 0; i < current_->size(); ++i) {
        pieces_[i].push_back(RowRange((*current_)[i], batch_idx_, batch_idx_ + take));
      }
      batch_idx_ += take;
      pending_rows_ += take;
    }
    std::vector<std::vector<Array>> pieces = std::move(pieces_);
    pieces_.clear();
    pending_rows_ = 0;
    if (pieces.empty()) return std::nullopt;
    std::vector<Value> leaves;
    for (size_t i = 0; i < pieces.size(); ++i) {
      leaves.push_back(Value(Concatenate(pieces[i], paths_[i])));
    }
    return RebuildTree(*treedef_, leaves);
  }

  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    if (pending_rows_ > 0) return pending_start_;
    return State{{kParentKey, last_parent_state_}, {kBatchIdxKey, batch_idx_}};
  }

  void SetState(const State& state) override {
    const int64_t batch_idx = StateInt(state, kBatchIdxKey, kName);
    if (batch_idx < 0) throw std::invalid_argument(std::string(kName) + ": negative batch_idx");
    parent_->SetState(StateField(state, kParentKey, kName));
    last_parent_state_ = parent_->GetState();
    batch_idx_ = batch_idx;
    current_.reset();
    pieces_.clear();
    pending_rows_ = 0;
  }

 private:
  int64_t Rows() const { return current_->empty() ? 0 : (*current_)[0].shape[0]; }

  // The leaves of a parent batch: arrays with one leading dimension of the same size. The
  // first batch fixes the tree structure of every output batch.
  std::vector<Array> Leaves(const Value& batch) {
    std::vector<std::pair<LeafPath, Value>> flat = FlattenTree(batch);
    if (!treedef_) {
      treedef_ = batch;
      for (auto& [path, leaf] : flat) paths_.push_back(path);
    }
    if (flat.size() != paths_.size()) {
      throw std::invalid_argument(std::string(kName) + ": a parent batch has " +
                                  std::to_string(flat.size()) + " leaves, the first had " +
                                  std::to_string(paths_.size()));
    }
    std::vector<Array> leaves;
    for (auto& [path, leaf] : flat) {
      if (!leaf.is<Array>() || leaf.AsArray().shape.empty()) {
        throw std::invalid_argument(std::string(kName) + ": " + LeafName(path) + " is " +
                                    leaf.Describe() +
                                    "; rebatching needs arrays with a leading batch dimension");
      }
      if (!leaves.empty() && leaf.AsArray().shape[0] != leaves[0].shape[0]) {
        throw std::invalid_argument(std::string(kName) + ": " + LeafName(path) + " is " +
                                    leaf.Describe() + " but the first leaf has " +
                                    std::to_string(leaves[0].shape[0]) + " rows");
      }
      leaves.push_back(leaf.AsArray());
    }
    return leaves;
  }

  std::unique_ptr<DatasetIterator> parent_;
  int64_t batch_size_;
  bool drop_remainder_;
  State last_parent_state_;
  std::optional<std::vector<Array>> current_;  // leaves of the parent batch being cut
  int64_t batch_idx_ = 0;
  std::vector<std::vector<Array>> pieces_;  // per leaf: rows taken for the batch being built
  int64_t pending_rows_ = 0;                // rows in pieces_
  State pending_start_;                     // GetState() before pieces_
  std::optional<Value> treedef_;
  std::vector<LeafPath> paths_;
};

}  // namespace

IterNodePtr MakeRebatchNode(IterNodePtr parent, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<IterOpNode>(std::move(parent), kName, [=](auto p) {
    return std::make_unique<RebatchIterator>(std::move(p), batch_size, drop_remainder);
  });
}

}  // namespace spelt::internal
