// The non-template parts of get_many.h: ElementwiseNode and GetManyRouted.
#include "ops/get_many.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace spelt::internal {

ElementwiseNode::ElementwiseNode(MapNodePtr parent, bool calls_python, bool filters)
    : MapNode({parent}, calls_python, filters), parent_(std::move(parent)) {
  if (const auto* p = dynamic_cast<const ElementwiseNode*>(parent_.get())) {
    source_ = p->source_;
    run_ = p->run_;
  } else {
    source_ = parent_;
  }
  run_.push_back(this);
}

void ElementwiseNode::GetMany(std::span<const int64_t> indices, Elements* out) const {
  Elements got;
  got.reserve(indices.size());
  const std::exception_ptr error = Capture([&] { source_->GetMany(indices, &got); });
  out->reserve(out->size() + got.size());
  for (size_t k = 0; k < got.size(); ++k) {
    std::optional<Value> v = std::move(got[k]);
    for (const ElementwiseNode* node : run_) v = node->Apply(indices[k], std::move(v));
    out->push_back(std::move(v));
  }
  if (error) std::rethrow_exception(error);
}

std::optional<Value> ElementwiseNode::GetStacked(std::span<const int64_t> indices) const {
  // run_[writer] writes each element into its slot; the maps after it work in place.
  size_t writer = run_.size() - 1;
  while (writer > 0 && run_[writer]->Into() != nullptr && run_[writer]->Into()->in_place) {
    --writer;
  }
  if (indices.empty() || run_[writer]->Into() == nullptr) return std::nullopt;
  for (const ElementwiseNode* node : run_) {
    if (node->CallsPython()) return std::nullopt;
  }
  Elements got;
  got.reserve(indices.size());
  source_->GetMany(indices, &got);
  std::optional<Value> first = std::move(got[0]);
  for (const ElementwiseNode* node : run_) first = node->Apply(indices[0], std::move(first));
  if (!first || !first->is<Array>()) return std::nullopt;
  const Array& a = first->as<Array>();
  std::vector<int64_t> shape{static_cast<int64_t>(indices.size())};
  shape.insert(shape.end(), a.shape.begin(), a.shape.end());
  Array batch = Array::AllocateUninitialized(a.dtype, std::move(shape));
  const size_t slot_bytes = a.nbytes();
  std::memcpy(batch.mutable_data(), a.data, slot_bytes);
  for (size_t k = 1; k < indices.size(); ++k) {
    const Array slot{a.dtype, a.shape, batch.owner, batch.data + k * slot_bytes};
    std::optional<Value> v = std::move(got[k]);
    for (size_t i = 0; i < writer; ++i) v = run_[i]->Apply(indices[k], std::move(v));
    if (!v || !run_[writer]->WriteInto(indices[k], *v, slot)) return std::nullopt;
    for (size_t i = writer + 1; i < run_.size(); ++i) {
      if (!run_[i]->WriteInto(indices[k], Value(slot), slot)) return std::nullopt;
    }
  }
  return Value(std::move(batch));
}

void GetManyRouted(std::span<const MapNodePtr> parents, std::span<const Route> routes,
                   Elements* out) {
  // Each parent's share of the routes, in order, and where each share's elements go.
  std::vector<std::vector<int64_t>> keys(parents.size());
  std::vector<std::vector<size_t>> positions(parents.size());
  for (size_t k = 0; k < routes.size(); ++k) {
    keys[routes[k].parent].push_back(routes[k].index);
    positions[routes[k].parent].push_back(k);
  }
  // Every share is read; the error that counts is the one at the earliest position, and the
  // elements before it are complete (each parent's prefix covers its positions before it).
  std::vector<Elements> got(parents.size());
  size_t failed_at = std::numeric_limits<size_t>::max();
  std::exception_ptr error;
  for (size_t p = 0; p < parents.size(); ++p) {
    if (keys[p].empty()) continue;
    got[p].reserve(keys[p].size());
    std::exception_ptr e = Capture([&] { parents[p]->GetMany(keys[p], &got[p]); });
    if (e && positions[p][got[p].size()] < failed_at) {
      failed_at = positions[p][got[p].size()];
      error = e;
    }
  }
  const size_t n = std::min(failed_at, routes.size());
  out->reserve(out->size() + n);
  std::vector<size_t> next(parents.size(), 0);
  for (size_t k = 0; k < n; ++k) {
    const size_t p = routes[k].parent;
    out->push_back(std::move(got[p][next[p]++]));
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace spelt::internal
