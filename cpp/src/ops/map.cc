// MapMapDataset, RandomMapMapDataset, MapWithIndexMapDataset: per-element functions on a
// MapDataset; filtered elements (nullopt) pass through without a call, and a function that
// returns None filters its element out (Grain's map.py).
#include "core/nodes.h"

namespace spelt::internal {
namespace {

class MapNodeImpl final : public MapNode {
 public:
  MapNodeImpl(MapNodePtr parent, MapFn fn, bool serial)
      : MapNode({parent}, serial), parent_(std::move(parent)), fn_(std::move(fn)) {}
  std::string Name() const override { return "MapMapDataset"; }
  int64_t Length() const override { return parent_->Length(); }
  std::optional<Value> Get(int64_t index) const override {
    std::optional<Value> v = parent_->Get(index);
    if (!v) return v;
    return NoneAsFiltered(fn_(std::move(*v)));
  }

 private:
  MapNodePtr parent_;
  MapFn fn_;
};

class RandomMapNode final : public MapNode {
 public:
  RandomMapNode(MapNodePtr parent, RandomMapFn fn, uint32_t seed, bool serial)
      : MapNode({parent}, serial), parent_(std::move(parent)), fn_(std::move(fn)),
        rng_(seed) {}
  std::string Name() const override { return "RandomMapMapDataset"; }
  int64_t Length() const override { return parent_->Length(); }
  std::optional<Value> Get(int64_t index) const override {
    std::optional<Value> v = parent_->Get(index);
    if (!v) return v;
    Philox rng = rng_;  // a copy per call keeps Get() thread-safe
    rng.SetCounter({0, 0, 0, static_cast<uint64_t>(index)});
    return NoneAsFiltered(fn_(std::move(*v), rng));
  }

 private:
  MapNodePtr parent_;
  RandomMapFn fn_;
  Philox rng_;  // keyed once; never advanced
};

class MapWithIndexNode final : public MapNode {
 public:
  MapWithIndexNode(MapNodePtr parent, MapWithIndexFn fn, bool serial)
      : MapNode({parent}, serial), parent_(std::move(parent)), fn_(std::move(fn)) {}
  std::string Name() const override { return "MapWithIndexMapDataset"; }
  int64_t Length() const override { return parent_->Length(); }
  std::optional<Value> Get(int64_t index) const override {
    std::optional<Value> v = parent_->Get(index);
    if (!v) return v;
    return NoneAsFiltered(fn_(index, std::move(*v)));
  }

 private:
  MapNodePtr parent_;
  MapWithIndexFn fn_;
};

}  // namespace

MapNodePtr MakeMapNode(MapNodePtr parent, MapFn fn, bool serial) {
  return std::make_shared<MapNodeImpl>(std::move(parent), std::move(fn), serial);
}

MapNodePtr MakeRandomMapNode(MapNodePtr parent, RandomMapFn fn, uint32_t seed, bool serial) {
  return std::make_shared<RandomMapNode>(std::move(parent), std::move(fn), seed, serial);
}

MapNodePtr MakeMapWithIndexNode(MapNodePtr parent, MapWithIndexFn fn, bool serial) {
  return std::make_shared<MapWithIndexNode>(std::move(parent), std::move(fn), serial);
}

}  // namespace spelt::internal
