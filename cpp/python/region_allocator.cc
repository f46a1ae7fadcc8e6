#include "region_allocator.h"

#include <iterator>
#include <stdexcept>
#include <string>

namespace spelt::python {

std::optional<int64_t> RegionAllocator::Allocate(int64_t length) {
  if (length <= 0) throw std::invalid_argument("Arena.allocate: length must be positive");
  for (auto it = holes_.begin(); it != holes_.end(); ++it) {
    if (it->second < length) continue;
    const auto [offset, hole] = *it;
    holes_.erase(it);
    if (hole > length) holes_[offset + length] = hole - length;
    lengths_[offset] = length;
    return offset;
  }
  return std::nullopt;
}

void RegionAllocator::Free(int64_t offset) {
  auto found = lengths_.find(offset);
  if (found == lengths_.end()) {
    throw std::invalid_argument("Arena.free: no region at offset " + std::to_string(offset));
  }
  int64_t length = found->second;
  lengths_.erase(found);
  auto next = holes_.lower_bound(offset);
  if (next != holes_.end() && next->first == offset + length) {  // merge with the next hole
    length += next->second;
    next = holes_.erase(next);
  }
  if (next != holes_.begin()) {  // merge with the previous hole
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += length;
      return;
    }
  }
  holes_[offset] = length;
}

}  // namespace spelt::python
