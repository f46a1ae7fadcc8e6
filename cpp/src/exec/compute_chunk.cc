// ComputeChunk (spelt/executor.h): the per-chunk work of every executor.
#include <numeric>

#include "spelt/executor.h"

namespace spelt {

ChunkResult ComputeChunk(const MapNode& node, int64_t begin, int64_t count) {
  ChunkResult out;
  out.begin = begin;
  out.count = count;
  out.values.reserve(static_cast<size_t>(count));
  std::vector<int64_t> indices(static_cast<size_t>(count));
  std::iota(indices.begin(), indices.end(), begin);
  try {
    node.GetMany(indices, &out.values);  // on an error, keeps the elements before it
  } catch (...) {
    out.error = std::current_exception();
  }
  return out;
}

}  // namespace spelt
