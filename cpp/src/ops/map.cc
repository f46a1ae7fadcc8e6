// MapMapDataset, RandomMapMapDataset, MapWithIndexMapDataset: per-element functions on a
// MapDataset; filtered elements (nullopt) pass through without a call, and a function that
// returns None filters its element out (Grain's map.py). A chunk reads its parent elements
// with one GetMany, then calls the function per element in index order.
#include "ops/map.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class MapNodeImpl final : public ElementwiseNode {
 public:
  MapNodeImpl(MapNodePtr parent, MapFn fn, bool calls_python)
      : ElementwiseNode(std::move(parent), calls_python), fn_(std::move(fn)) {}
  std::string Name() const override { return "MapMapDataset"; }

 private:
  std::optional<Value> Apply(int64_t, std::optional<Value> v) const override {
    if (!v) return v;
    return NoneAsFiltered(fn_(std::move(*v)));
  }

  MapFn fn_;
};

class RandomMapNode final : public ElementwiseNode {
 public:
  RandomMapNode(MapNodePtr parent, RandomMapFn fn, const AnySeed& seed, bool calls_python)
      : ElementwiseNode(std::move(parent), calls_python), fn_(std::move(fn)), rng_(seed) {}
  std::string Name() const override { return "RandomMapMapDataset"; }

 private:
  std::optional<Value> Apply(int64_t index, std::optional<Value> v) const override {
    if (!v) return v;
    Philox rng = rng_;  // a copy per call keeps Get() thread-safe
    rng.SetCounter({0, 0, 0, static_cast<uint64_t>(index)});
    return NoneAsFiltered(fn_(std::move(*v), rng));
  }

  RandomMapFn fn_;
  Philox rng_;  // keyed once; never advanced
};

class MapWithIndexNode final : public ElementwiseNode {
 public:
  MapWithIndexNode(MapNodePtr parent, MapWithIndexFn fn, bool calls_python)
      : ElementwiseNode(std::move(parent), calls_python), fn_(std::move(fn)) {}
  std::string Name() const override { return "MapWithIndexMapDataset"; }

 private:
  std::optional<Value> Apply(int64_t index, std::optional<Value> v) const override {
    if (!v) return v;
    return NoneAsFiltered(fn_(index, std::move(*v)));
  }

  MapWithIndexFn fn_;
};

}  // namespace

MapNodePtr MakeMapNode(MapNodePtr parent, MapFn fn, bool calls_python) {
  return std::make_shared<MapNodeImpl>(std::move(parent), std::move(fn), calls_python);
}

MapNodePtr MakeRandomMapNode(MapNodePtr parent, RandomMapFn fn, const AnySeed& seed,
                             bool calls_python) {
  return std::make_shared<RandomMapNode>(std::move(parent), std::move(fn), seed, calls_python);
}

MapNodePtr MakeMapWithIndexNode(MapNodePtr parent, MapWithIndexFn fn, bool calls_python) {
  return std::make_shared<MapWithIndexNode>(std::move(parent), std::move(fn), calls_python);
}

}  // namespace spelt::internal
