// Internal: where the records of uncompressed data chunks lie, learnt when a reader first reads
// such a chunk whole and checks its hashes. A later read of a few of its records then reads
// just their bytes instead of the whole chunk again (with group_size 64 and 100 KiB records, a
// 100 KiB read instead of 6.4 MB read and hashed). Thread-safe: each entry is written once and
// never changes; lookups take no lock.
#ifndef SPELT_SRC_ARRAY_RECORD_RECORD_LOCATIONS_H_
#define SPELT_SRC_ARRAY_RECORD_RECORD_LOCATIONS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace spelt::internal::array_record {

class RecordLocations {
 public:
  // The records of one chunk: record i is the logical bytes [values_begin + (i ? ends[i-1] :
  // 0), values_begin + ends[i]) of the chunk, counted from its first byte (block headers not
  // counted; riegeli::PhysicalPosition maps them to file offsets).
  struct Chunk {
    uint64_t values_begin = 0;
    std::vector<uint64_t> ends;
  };

  explicit RecordLocations(uint64_t num_chunks);
  ~RecordLocations();
  RecordLocations(const RecordLocations&) = delete;
  RecordLocations& operator=(const RecordLocations&) = delete;

  // Chunk `c`'s locations, or null if not known. REQUIRES: c < num_chunks.
  const Chunk* Find(uint64_t c) const {
    return chunks_[c].load(std::memory_order_acquire);
  }
  // Records chunk `c`'s locations unless known already. REQUIRES: c < num_chunks.
  void Insert(uint64_t c, Chunk chunk);

 private:
  const uint64_t num_chunks_;
  std::unique_ptr<std::atomic<const Chunk*>[]> chunks_;
};

}  // namespace spelt::internal::array_record

#endif  // SPELT_SRC_ARRAY_RECORD_RECORD_LOCATIONS_H_
