// spelt/range_reads.h: how a batch of reads of a remote file goes out as range requests.
//
// An object store answers each request after a round trip (10-50 ms), so a remote
// RandomAccessFile sends a batch (RandomAccessFile::ReadMany) as few, concurrent ranges:
// requests whose bytes lie at most `max_gap` apart are coalesced into one range (the bytes in
// between are read and dropped: cheaper than another round trip), and a range longer than
// `max_range` is split so that one large read also goes out as concurrent requests. The
// defaults are documented in docs/remote.md.
//
// Thread-safety: pure functions.
#ifndef SPELT_RANGE_READS_H_
#define SPELT_RANGE_READS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "spelt/file_system.h"

namespace spelt {

// Requests at most this far apart (bytes between one's end and the next's start) share a range.
inline constexpr uint64_t kCoalesceGapBytes = uint64_t{64} << 10;
// No range is longer than this; longer ones are split into pieces of this size.
inline constexpr uint64_t kMaxRangeBytes = uint64_t{1} << 20;

// Bytes [offset, offset + length) of a file.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const ByteRange&) const = default;
};

// The ranges that cover every byte of `requests` (in any order, overlapping or not; empty
// requests ignored): sorted by offset, disjoint, each at most `max_range` (>= 1) long.
// Requests are merged into one range where the gap between them is at most `max_gap`.
std::vector<ByteRange> PlanRanges(std::span<const ReadRequest> requests,
                                  uint64_t max_gap = kCoalesceGapBytes,
                                  uint64_t max_range = kMaxRangeBytes);

// Fills every request of `requests` from `parts`, where parts[i] holds the bytes of
// ranges[i] and `ranges` is what PlanRanges returned for `requests`.
void CopyFromRanges(std::span<const ReadRequest> requests, std::span<const ByteRange> ranges,
                    std::span<const char* const> parts);

}  // namespace spelt

#endif  // SPELT_RANGE_READS_H_
