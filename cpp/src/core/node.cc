// What every node shares (spelt/node.h): the flags and default seed derived from the parents,
// MapNode's element-by-element GetMany, and the iterators that cannot tell their next index.
#include <deque>
#include <utility>
#include <vector>

#include "spelt/node.h"

namespace spelt {

DatasetNode::DatasetNode(std::vector<std::shared_ptr<const DatasetNode>> parents,
                         bool calls_python_self, bool filters_self)
    : parents_(std::move(parents)), calls_python_(calls_python_self), filters_(filters_self) {
  for (const auto& p : parents_) {
    calls_python_ = calls_python_ || p->CallsPython();
    filters_ = filters_ || p->Filters();
  }
}

std::optional<uint32_t> DatasetNode::DefaultSeed() const {
  std::vector<uint64_t> entropy;
  std::deque<std::pair<const DatasetNode*, uint64_t>> to_visit;
  // Queues `node` at `depth`; a node that is no level (IsLevel()) is replaced by its parents,
  // in its place in the order, as if they were the parents of the node below it.
  auto enqueue = [&](auto& self, const DatasetNode* node, uint64_t depth) -> void {
    if (node->IsLevel() || node->seed_words()) {
      to_visit.emplace_back(node, depth);
      return;
    }
    for (const auto& p : node->parents()) self(self, p.get(), depth);
  };
  enqueue(enqueue, this, 1);  // depth of the new node's parent
  while (!to_visit.empty()) {
    auto [node, depth] = to_visit.front();
    to_visit.pop_front();
    if (const auto& words = node->seed_words()) {
      entropy.insert(entropy.end(), words->begin(), words->end());
      entropy.push_back(depth);
    } else {
      for (const auto& p : node->parents()) enqueue(enqueue, p.get(), depth + 1);
    }
  }
  if (entropy.empty()) return std::nullopt;
  return SeedSequenceGenerateState(entropy, 1)[0];
}

void MapNode::GetMany(std::span<const int64_t> indices,
                      std::vector<std::optional<Value>>* out) const {
  out->reserve(out->size() + indices.size());
  for (const int64_t index : indices) out->push_back(Get(index));
}

int64_t DatasetIterator::NextIndexOf(const State& /*state*/) const {
  throw NextIndexUnsupported(
      "get_next_index is not supported by this iterator: its last operation cannot tell the "
      "index of its next element");
}

State DatasetIterator::StateAtIndex(int64_t /*index*/, const State& /*state*/) const {
  throw NextIndexUnsupported(
      "set_next_index is not supported by this iterator: its last operation cannot move to an "
      "index without reading");
}

}  // namespace spelt
