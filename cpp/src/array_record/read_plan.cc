#include "array_record/read_plan.h"

#include <algorithm>
#include <numeric>

namespace spelt::internal::array_record {

ReadPlan PlanReads(std::span<const uint64_t> indices, uint64_t group_size,
                   std::span<const uint64_t> chunk_offsets, uint64_t max_run_bytes,
                   const std::function<bool(uint64_t chunk, size_t requests)>& read_alone) {
  ReadPlan plan;
  plan.order.resize(indices.size());
  std::iota(plan.order.begin(), plan.order.end(), size_t{0});
  std::sort(plan.order.begin(), plan.order.end(),
            [&](size_t a, size_t b) { return indices[a] < indices[b]; });
  for (size_t i = 0; i < plan.order.size(); ++i) {
    const uint64_t chunk = indices[plan.order[i]] / group_size;
    if (plan.groups.empty() || plan.groups.back().chunk != chunk) {
      plan.groups.push_back({chunk, i, i});
    }
    plan.groups.back().end = i + 1;
  }
  bool extendable = false;  // whether the last run may take the next chunk
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const uint64_t chunk = plan.groups[g].chunk;
    const bool alone = read_alone(chunk, plan.groups[g].end - plan.groups[g].begin);
    if (extendable && !alone && chunk == plan.groups[g - 1].chunk + 1 &&
        chunk_offsets[chunk + 1] - chunk_offsets[plan.groups[plan.runs.back().begin].chunk] <=
            max_run_bytes) {
      plan.runs.back().end = g + 1;
    } else {
      plan.runs.push_back({g, g + 1});
      extendable = !alone;
    }
  }
  return plan;
}

}  // namespace spelt::internal::array_record
