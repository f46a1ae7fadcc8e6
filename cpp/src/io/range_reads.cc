// PlanRanges and CopyFromRanges (spelt/range_reads.h).
#include "spelt/range_reads.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace spelt {
namespace {

// The non-empty requests of `requests`, sorted by offset.
std::vector<const ReadRequest*> Sorted(std::span<const ReadRequest> requests) {
  std::vector<const ReadRequest*> sorted;
  sorted.reserve(requests.size());
  for (const ReadRequest& r : requests) {
    if (r.length > 0) sorted.push_back(&r);
  }
  std::ranges::sort(sorted, {}, &ReadRequest::offset);
  return sorted;
}

}  // namespace

std::vector<ByteRange> PlanRanges(std::span<const ReadRequest> requests, uint64_t max_gap,
                                  uint64_t max_range) {
  if (max_range == 0) throw std::invalid_argument("PlanRanges: max_range must be at least 1");
  std::vector<ByteRange> ranges;
  uint64_t begin = 0, end = 0;  // the span being gathered; empty before the first request
  const auto flush = [&] {
    for (uint64_t at = begin; at < end; at += max_range) {
      ranges.push_back({at, std::min(max_range, end - at)});
    }
  };
  for (const ReadRequest* r : Sorted(requests)) {
    if (end > begin && r->offset <= end + max_gap) {
      end = std::max(end, r->offset + r->length);
      continue;
    }
    flush();
    begin = r->offset;
    end = r->offset + r->length;
  }
  flush();
  return ranges;
}

void CopyFromRanges(std::span<const ReadRequest> requests, std::span<const ByteRange> ranges,
                    std::span<const char* const> parts) {
  for (const ReadRequest& r : requests) {
    // The first range that ends after the request starts; ranges are sorted and disjoint.
    auto it = std::ranges::upper_bound(ranges, r.offset,
                                       {}, [](const ByteRange& b) { return b.offset + b.length; });
    for (uint64_t at = r.offset; at < r.offset + r.length; ++it) {
      if (it == ranges.end() || it->offset > at) {
        throw std::logic_error("CopyFromRanges: the ranges do not cover the requests");
      }
      const uint64_t n = std::min(r.offset + r.length, it->offset + it->length) - at;
      std::memcpy(r.dst + (at - r.offset), parts[it - ranges.begin()] + (at - it->offset), n);
      at += n;
    }
  }
}

}  // namespace spelt
