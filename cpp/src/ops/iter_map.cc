// Per-element functions on an IterDataset: MapIterDataset, RandomMapIterDataset and
// MapWithIndexIterDataset (Grain's map.py).
// States: map passes the parent's state through; random_map is
// {"parent": ..., "index_for_rng": k} and map_with_index {"parent": ..., "counter": k}, where
// k counts the elements the iterator has taken from its parent. Next index (Grain's): map's is
// its parent's, random_map's and map_with_index's is k.
#include "ops/iter_map.h"
#include "core/iter_op_node.h"

namespace spelt::internal {
namespace {

constexpr char kIndexForRngKey[] = "index_for_rng";  // random_map's count
constexpr char kCounterKey[] = "counter";            // map_with_index's count

class MapIterator final : public DatasetIterator {
 public:
  MapIterator(std::unique_ptr<DatasetIterator> parent, MapFn fn)
      : parent_(std::move(parent)), fn_(std::move(fn)) {}
  std::optional<Value> Next() override {
    std::optional<Value> v = parent_->Next();
    if (!v) return v;
    return fn_(std::move(*v));
  }
  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override { return parent_->GetState(); }
  void SetState(const State& state) override { parent_->SetState(state); }
  int64_t NextIndexOf(const State& state) const override { return parent_->NextIndexOf(state); }
  State StateAtIndex(int64_t index, const State& state) const override {
    return parent_->StateAtIndex(index, state);
  }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  MapFn fn_;
};

// Shared by random_map and map_with_index: fn gets the running count k.
template <typename Call>
class CountingIterator final : public DatasetIterator {
 public:
  CountingIterator(std::unique_ptr<DatasetIterator> parent, Call call, const char* field,
                   const char* name)
      : parent_(std::move(parent)), call_(std::move(call)), field_(field), name_(name) {}
  std::optional<Value> Next() override {
    std::optional<Value> v = parent_->Next();
    if (!v) return v;
    return call_(counter_++, std::move(*v));
  }
  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    return State{{kParentKey, parent_->GetState()}, {field_, counter_}};
  }
  void SetState(const State& state) override {
    const int64_t k = StateInt(state, field_, name_);
    if (k < 0) {
      throw std::invalid_argument(std::string(name_) + ": state field '" + field_ +
                                  "' must be >= 0, got " + std::to_string(k));
    }
    parent_->SetState(StateField(state, kParentKey, name_));
    counter_ = k;
  }
  int64_t NextIndexOf(const State& state) const override { return StateInt(state, field_, name_); }
  State StateAtIndex(int64_t index, const State& state) const override {
    return CountedStateAt(*parent_, index, state, field_, name_);
  }

 private:
  std::unique_ptr<DatasetIterator> parent_;
  Call call_;
  const char* field_;
  const char* name_;
  int64_t counter_ = 0;
};

template <typename Call>
std::unique_ptr<DatasetIterator> MakeCounting(std::unique_ptr<DatasetIterator> parent, Call call,
                                              const char* field, const char* name) {
  return std::make_unique<CountingIterator<Call>>(std::move(parent), std::move(call), field,
                                                  name);
}

}  // namespace

IterNodePtr MakeIterMapNode(IterNodePtr parent, MapFn fn) {
  return std::make_shared<IterOpNode>(std::move(parent), "MapIterDataset",
                                      [fn = std::move(fn)](auto p) {
                                        return std::make_unique<MapIterator>(std::move(p), fn);
                                      });
}

IterNodePtr MakeIterRandomMapNode(IterNodePtr parent, RandomMapFn fn, const AnySeed& seed) {
  constexpr const char* kName = "RandomMapIterDataset";
  return std::make_shared<IterOpNode>(
      std::move(parent), kName, [fn = std::move(fn), rng = Philox(seed)](auto p) {
        auto call = [fn, rng](int64_t k, Value v) {
          Philox r = rng;
          r.SetCounter({0, 0, 0, static_cast<uint64_t>(k)});
          return fn(std::move(v), r);
        };
        return MakeCounting(std::move(p), std::move(call), kIndexForRngKey, kName);
      });
}

IterNodePtr MakeIterMapWithIndexNode(IterNodePtr parent, MapWithIndexFn fn) {
  constexpr const char* kName = "MapWithIndexIterDataset";
  return std::make_shared<IterOpNode>(
      std::move(parent), kName, [fn = std::move(fn)](auto p) {
        return MakeCounting(std::move(p), fn, kCounterKey, kName);
      });
}

}  // namespace spelt::internal
