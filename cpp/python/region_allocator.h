// First-fit allocation of a worker's arena (py_arena.h) into regions named by their offset.
#ifndef SPELT_PYTHON_REGION_ALLOCATOR_H_
#define SPELT_PYTHON_REGION_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

namespace spelt::python {

// Allocates [0, size) into regions named by their offset. Free space is a map of disjoint holes
// (offset -> length); freeing merges neighbours. Lowest addresses first keeps the touched part of
// the arena as small as the data in flight allows.
// Errors: std::invalid_argument for a length <= 0 and for freeing an offset that is not a live
// region. Not thread-safe (only the worker that owns the arena allocates).
class RegionAllocator {
 public:
  explicit RegionAllocator(int64_t size) { holes_[0] = size; }

  // The offset of a new region of `length` bytes, or nullopt if no hole is large enough.
  std::optional<int64_t> Allocate(int64_t length);
  // Returns the region at `offset` (from Allocate) to the free space.
  void Free(int64_t offset);

 private:
  std::map<int64_t, int64_t> holes_;
  std::unordered_map<int64_t, int64_t> lengths_;  // live region offset -> length
};

}  // namespace spelt::python

#endif  // SPELT_PYTHON_REGION_ALLOCATOR_H_
