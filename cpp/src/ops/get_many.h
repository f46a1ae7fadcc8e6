// Internal: the shared parts of the MapNode::GetMany overrides in cpp/src/ops/. Each keeps the
// contract of spelt/node.h: on an exception, *out holds exactly the elements before the
// failing index and the exception is the one Get() would raise for it.
#ifndef SPELT_SRC_OPS_GET_MANY_H_
#define SPELT_SRC_OPS_GET_MANY_H_

#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "core/nodes.h"

namespace spelt::internal {

using Elements = std::vector<std::optional<Value>>;

// Runs f() and returns what it threw (null if nothing): for reads that append a prefix and may
// fail, whose prefix is used before the error is rethrown.
template <typename F>
std::exception_ptr Capture(F&& f) {
  try {
    f();
    return nullptr;
  } catch (...) {
    return std::current_exception();
  }
}

// f(index) for each of `indices`, in order, until one throws: the results and that exception.
// f is the index arithmetic that Get() does before reading (and may throw as Get() would).
template <typename F>
auto MapIndices(std::span<const int64_t> indices, F&& f) {
  std::vector<decltype(f(int64_t{}))> mapped;
  mapped.reserve(indices.size());
  std::exception_ptr error = Capture([&] {
    for (const int64_t index : indices) mapped.push_back(f(index));
  });
  return std::pair(std::move(mapped), error);
}

// A node whose element i is its parent's element ParentIndex(i) (shuffle, slice, repeat,
// shard): Get() and a GetMany() that reads the parent with one GetMany().
class IndexMapNode : public MapNode {
 public:
  std::optional<Value> Get(int64_t index) const final {
    return parent_->Get(ParentIndex(index));
  }
  void GetMany(std::span<const int64_t> indices, Elements* out) const final {
    std::vector<int64_t> mapped(indices.size());
    std::exception_ptr error = Capture([&] { ParentIndices(indices, mapped); });
    if (error) {  // the parent reads the indices before the failing one
      std::tie(mapped, error) =
          MapIndices(indices, [this](int64_t i) { return ParentIndex(i); });
    }
    parent_->GetMany(mapped, out);
    if (error) std::rethrow_exception(error);
  }
  std::optional<Value> GetStacked(std::span<const int64_t> indices) const final {
    std::vector<int64_t> mapped(indices.size());
    ParentIndices(indices, mapped);
    return parent_->GetStacked(mapped);
  }

 protected:
  explicit IndexMapNode(MapNodePtr parent) : MapNode({parent}), parent_(std::move(parent)) {}
  // The parent's index for `index`; throws as Get() does before reading (e.g. when empty).
  virtual int64_t ParentIndex(int64_t index) const = 0;
  // out[i] = ParentIndex(indices[i]) for each i (out.size() == indices.size()); a node
  // overrides it where many indices are mapped faster together (shuffle). Throws as
  // ParentIndex does for any of them (what `out` then holds is unspecified).
  virtual void ParentIndices(std::span<const int64_t> indices, std::span<int64_t> out) const {
    for (size_t i = 0; i < indices.size(); ++i) out[i] = ParentIndex(indices[i]);
  }
  const MapNodePtr& parent() const { return parent_; }

 private:
  MapNodePtr parent_;
};

// A node whose element i is Apply(i, its parent's element i) (map, random_map,
// map_with_index, filter). GetMany() reads the first ancestor that is not such a node with one
// GetMany() and then, element by element, applies the run of functions up to this node, so
// each element's functions run back to back in the order Get() calls them (the DataLoader's
// RandomMaps rely on it: they share one generator per record).
// GetStacked() does the same into one batch array where the run ends in maps with a MapInto
// (spelt/node.h), none of them calling Python: element 0's output, an array, gives the batch's
// dtype and shape; each later element's last writing map puts its output straight into its
// slot, and the in-place maps after it change the slot there. Where an output is not an array
// of that dtype and shape it returns nullopt, and the elements it computed are computed again
// by GetMany() (the functions are then called twice for them).
class ElementwiseNode : public MapNode {
 public:
  std::optional<Value> Get(int64_t index) const final {
    return Apply(index, parent_->Get(index));
  }
  void GetMany(std::span<const int64_t> indices, Elements* out) const final;
  std::optional<Value> GetStacked(std::span<const int64_t> indices) const final;
  int64_t Length() const final { return parent_->Length(); }

 protected:
  // `filters`: Apply() may remove elements (see DatasetNode::Filters).
  ElementwiseNode(MapNodePtr parent, bool calls_python, bool filters = false);
  // The element at `index` from the parent's element there (nullopt: filtered out).
  virtual std::optional<Value> Apply(int64_t index, std::optional<Value> element) const = 0;
  // The node's MapInto, or nullptr if it has none; WriteInto() calls its `write` for `index`.
  virtual const MapInto* Into() const { return nullptr; }
  virtual bool WriteInto(int64_t /*index*/, const Value& /*element*/,
                         const Array& /*slot*/) const {
    return false;
  }

 private:
  MapNodePtr parent_;
  MapNodePtr source_;  // the first ancestor that is not an ElementwiseNode
  std::vector<const ElementwiseNode*> run_;  // from source_'s child up to this node
};

// Where an element of a node with several parents comes from: parents[parent].Get(index).
struct Route {
  size_t parent;
  int64_t index;
};

// parents[r.parent].GetMany(r.index ...) for every route: one GetMany per parent over its
// share, merged back in order.
void GetManyRouted(std::span<const MapNodePtr> parents, std::span<const Route> routes,
                   Elements* out);

// A node whose element i is inputs()[r.parent]'s element r.index for r = RouteOf(i)
// (concatenate, mix): Get() and a GetMany() that reads each parent with one GetMany().
class RoutedNode : public MapNode {
 public:
  std::optional<Value> Get(int64_t index) const final {
    const Route r = RouteOf(index);
    return inputs_[r.parent]->Get(r.index);
  }
  void GetMany(std::span<const int64_t> indices, Elements* out) const final {
    auto [routes, error] = MapIndices(indices, [this](int64_t i) { return RouteOf(i); });
    GetManyRouted(inputs_, routes, out);
    if (error) std::rethrow_exception(error);
  }

 protected:
  explicit RoutedNode(std::vector<MapNodePtr> inputs)
      : MapNode({inputs.begin(), inputs.end()}), inputs_(std::move(inputs)) {}
  // Where element `index` comes from; throws as Get() does before reading.
  virtual Route RouteOf(int64_t index) const = 0;
  const std::vector<MapNodePtr>& inputs() const { return inputs_; }

 private:
  std::vector<MapNodePtr> inputs_;
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_GET_MANY_H_
