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
  RandomMapNode(MapNodePtr parent, RandomMapFn fn, const AnySeed& seed, bool calls_python,
                MapInto into)
      : ElementwiseNode(std::move(parent), calls_python), fn_(std::move(fn)), rng_(seed),
        into_(std::move(into)) {}
  std::string Name() const override { return "RandomMapMapDataset"; }

 private:
  std::optional<Value> Apply(int64_t index, std::optional<Value> v) const override {
    if (!v) return v;
    Philox rng = RngAt(index);
    return NoneAsFiltered(fn_(std::move(*v), rng));
  }
  const MapInto* Into() const override { return into_.write ? &into_ : nullptr; }
  bool WriteInto(int64_t index, const Value& element, const Array& slot) const override {
    Philox rng = RngAt(index);
    return into_.write(index, element, &rng, slot);
  }
  // A copy per call keeps Get() thread-safe.
  Philox RngAt(int64_t index) const {
    Philox rng = rng_;
    rng.SetCounter({0, 0, 0, static_cast<uint64_t>(index)});
    return rng;
  }

  RandomMapFn fn_;
  Philox rng_;  // keyed once; never advanced
  MapInto into_;
};

class MapWithIndexNode final : public ElementwiseNode {
 public:
  MapWithIndexNode(MapNodePtr parent, MapWithIndexFn fn, bool calls_python, MapInto into)
      : ElementwiseNode(std::move(parent), calls_python), fn_(std::move(fn)),
        into_(std::move(into)) {}
  std::string Name() const override { return "MapWithIndexMapDataset"; }

 private:
  std::optional<Value> Apply(int64_t index, std::optional<Value> v) const override {
    if (!v) return v;
    return NoneAsFiltered(fn_(index, std::move(*v)));
  }
  const MapInto* Into() const override { return into_.write ? &into_ : nullptr; }
  bool WriteInto(int64_t index, const Value& element, const Array& slot) const override {
    return into_.write(index, element, nullptr, slot);
  }

  MapWithIndexFn fn_;
  MapInto into_;
};

}  // namespace

MapNodePtr MakeMapNode(MapNodePtr parent, MapFn fn, bool calls_python) {
  return std::make_shared<MapNodeImpl>(std::move(parent), std::move(fn), calls_python);
}

MapNodePtr MakeRandomMapNode(MapNodePtr parent, RandomMapFn fn, const AnySeed& seed,
                             bool calls_python, MapInto into) {
  return std::make_shared<RandomMapNode>(std::move(parent), std::move(fn), seed, calls_python,
                                         std::move(into));
}

MapNodePtr MakeMapWithIndexNode(MapNodePtr parent, MapWithIndexFn fn, bool calls_python,
                                MapInto into) {
  return std::make_shared<MapWithIndexNode>(std::move(parent), std::move(fn), calls_python,
                                            std::move(into));
}

}  // namespace spelt::internal
