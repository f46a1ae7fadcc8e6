// CacheIterDataset (Grain 0.2.18's transformations/cache.py, _InMemoryCacheDatasetIterator):
// the iterator keeps every element it reads from its parent; once the parent has ended, the
// stream is the kept elements, so a restart to the initial state (RepeatIterDataset) reads
// them instead of the parent. Elements are shared, not copied, between passes.
// State: {"parent": parent state, "position": elements of this pass returned, "cache_filled":
// whether the parent has ended}. Restoring a state taken after the parent ended into an
// iterator whose cache is not full (a fresh one) re-reads the parent from its initial state up
// to `position` at the next Next(), as Grain does; so does a position past the kept elements.
// Until then, GetState() returns the state restored (Grain's says "cache_filled": false).
// Memory: every element of one pass of the parent, for the iterator's lifetime.
#include "ops/cache.h"

#include <stdexcept>
#include <vector>

#include "core/iter_op_node.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "CacheIterDataset";
// State keys besides kParentKey (Grain's CacheIterDataset): elements of the pass returned,
// whether the cache is filled.
constexpr char kPositionKey[] = "position";
constexpr char kCacheFilledKey[] = "cache_filled";

class CacheIterator final : public DatasetIterator {
 public:
  explicit CacheIterator(std::unique_ptr<DatasetIterator> parent)
      : parent_(std::move(parent)), start_(parent_->GetState()) {}
  std::optional<Value> Next() override {
    if (rebuild_) Rebuild();
    if (filled_) {
      if (position_ >= static_cast<int64_t>(cache_.size())) return std::nullopt;
      return cache_[position_++];
    }
    std::optional<Value> v = parent_->Next();
    if (!v) {
      filled_ = true;
      return std::nullopt;
    }
    if (static_cast<int64_t>(cache_.size()) == position_) cache_.push_back(*v);
    ++position_;
    return v;
  }
  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    return State{{kParentKey, parent_->GetState()}, {kPositionKey, position_},
                 {kCacheFilledKey, filled_ || refill_}};
  }
  void SetState(const State& state) override {
    const State& parent = StateField(state, kParentKey, kName);
    const int64_t position = StateInt(state, kPositionKey, kName);
    const State& filled = StateField(state, kCacheFilledKey, kName);
    if (position < 0) throw std::invalid_argument(std::string(kName) + ": negative position");
    if (!filled.is_boolean()) {
      throw std::invalid_argument(std::string(kName) + ": 'cache_filled' must be a bool");
    }
    // A state of a filled cache holds the parent's end state, useless to a cache not filled.
    refill_ = filled.get<bool>() && !filled_;
    if (refill_) rebuild_ = true;
    parent_->SetState(parent);
    position_ = position;
    if (position_ > static_cast<int64_t>(cache_.size()) && !filled_) rebuild_ = true;
  }

 private:
  // Reads the parent again from its initial state up to position_, keeping the elements.
  void Rebuild() {
    parent_->SetState(start_);
    cache_.clear();
    rebuild_ = refill_ = false;
    while (static_cast<int64_t>(cache_.size()) < position_) {
      std::optional<Value> v = parent_->Next();
      if (!v) {  // the parent has fewer elements than the state says
        filled_ = true;
        return;
      }
      cache_.push_back(std::move(*v));
    }
  }

  std::unique_ptr<DatasetIterator> parent_;
  State start_;
  std::vector<Value> cache_;
  int64_t position_ = 0;
  bool filled_ = false;
  bool rebuild_ = false;
  // Restored from a filled cache's state and not rebuilt yet: GetState() still says filled,
  // so that the state right after a restore is the state restored (Grain's says not filled).
  bool refill_ = false;
};

}  // namespace

IterNodePtr MakeCacheNode(IterNodePtr parent) {
  return std::make_shared<IterOpNode>(std::move(parent), kName, [](auto p) {
    return std::make_unique<CacheIterator>(std::move(p));
  });
}

}  // namespace spelt::internal
