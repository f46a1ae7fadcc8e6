// Internal: the plan of a batched read (ArrayRecordReader::ReadRecords). Requested records are
// grouped by chunk, so that each chunk is decoded once, and groups of neighbouring chunks form
// runs that are read with one pread (a file with group_size 1 read in order then costs one
// system call per run, not per record).
#ifndef SPELT_SRC_ARRAY_RECORD_READ_PLAN_H_
#define SPELT_SRC_ARRAY_RECORD_READ_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace spelt::internal::array_record {

struct ReadPlan {
  struct Group {
    uint64_t chunk;
    size_t begin, end;  // order[begin, end): the requests for records of `chunk`
  };
  struct Run {
    size_t begin, end;  // groups[begin, end): consecutive chunks, read together
  };
  std::vector<size_t> order;  // request positions, sorted by record index
  std::vector<Group> groups;  // sorted by chunk
  std::vector<Run> runs;
};

// Plans reading the records `indices` of a file whose chunks hold `group_size` records each
// (the last maybe fewer) and begin at `chunk_offsets` (one per chunk, then the end of the
// last). A run of several chunks spans at most `max_run_bytes`; a chunk for which
// `read_alone(chunk, requests)` returns true (it is cached, or its `requests` records are read
// in place) forms a run of its own. REQUIRES: every index is in the file.
ReadPlan PlanReads(std::span<const uint64_t> indices, uint64_t group_size,
                   std::span<const uint64_t> chunk_offsets, uint64_t max_run_bytes,
                   const std::function<bool(uint64_t chunk, size_t requests)>& read_alone);

}  // namespace spelt::internal::array_record

#endif  // SPELT_SRC_ARRAY_RECORD_READ_PLAN_H_
