// ShuffleMapDataset: global shuffle by index_shuffle, a fresh permutation per epoch
// (epoch e uses seed + e mod 2^32), O(1) memory (Grain's shuffle.py). An infinite parent is
// shuffled as one epoch of kInfiniteLength indices, as Grain does.
#include <stdexcept>
#include <vector>

#include "ops/shuffle.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

class ShuffleNode final : public IndexMapNode {
 public:
  ShuffleNode(MapNodePtr parent, uint32_t seed)
      : IndexMapNode(std::move(parent)), seed_(seed), length_(this->parent()->Length()) {}
  std::string Name() const override { return "ShuffleMapDataset"; }
  int64_t Length() const override { return length_; }

 private:
  int64_t ParentIndex(int64_t index) const override {
    if (length_ == 0) throw std::out_of_range("shuffle: index into an empty dataset");
    const int64_t epoch = index / length_;
    const int64_t pos = index % length_;
    const uint32_t epoch_seed = static_cast<uint32_t>(seed_ + static_cast<uint64_t>(epoch));
    const auto shuffled = static_cast<int64_t>(
        IndexShuffle(static_cast<uint64_t>(pos), static_cast<uint64_t>(length_ - 1), epoch_seed));
    return shuffled + epoch * length_;
  }

  // Runs of one epoch shuffled together (IndexShuffleMany).
  void ParentIndices(std::span<const int64_t> indices, std::span<int64_t> out) const override {
    if (length_ == 0 && !indices.empty()) ParentIndex(indices[0]);  // throws
    std::vector<uint64_t> positions(indices.size()), shuffled(indices.size());
    for (size_t begin = 0, end; begin < indices.size(); begin = end) {
      const int64_t epoch = indices[begin] / length_;
      for (end = begin; end < indices.size() && indices[end] / length_ == epoch; ++end) {
        positions[end] = static_cast<uint64_t>(indices[end] % length_);
      }
      const auto run = std::span(shuffled).subspan(begin, end - begin);
      IndexShuffleMany(std::span(positions).subspan(begin, end - begin),
                       static_cast<uint64_t>(length_ - 1),
                       static_cast<uint32_t>(seed_ + static_cast<uint64_t>(epoch)), run);
      for (size_t i = begin; i < end; ++i) {
        out[i] = static_cast<int64_t>(shuffled[i]) + epoch * length_;
      }
    }
  }

  uint32_t seed_;
  int64_t length_;
};

}  // namespace

MapNodePtr MakeShuffleNode(MapNodePtr parent, uint32_t seed) {
  return std::make_shared<ShuffleNode>(std::move(parent), seed);
}

}  // namespace spelt::internal
