// Internal: a small least-recently-used cache of decoded chunks, keyed by chunk index.
// Thread-safe. Lookups scan linearly: it is meant for a handful of entries.
#ifndef SPELT_SRC_ARRAY_RECORD_CHUNK_CACHE_H_
#define SPELT_SRC_ARRAY_RECORD_CHUNK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "riegeli/simple_chunk.h"

namespace spelt::internal::array_record {

class ChunkCache {
 public:
  using ChunkPtr = std::shared_ptr<const riegeli::DecodedChunk>;

  // Holds at most `capacity` chunks; 0 holds none.
  explicit ChunkCache(size_t capacity) : capacity_(capacity) {}

  size_t capacity() const { return capacity_; }

  // The cached chunk `index` (now the most recently used), or null.
  ChunkPtr Find(uint64_t index);
  // Caches `chunk` as chunk `index`, evicting the least recently used chunk if full.
  void Insert(uint64_t index, ChunkPtr chunk);

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::vector<std::pair<uint64_t, ChunkPtr>> entries_;  // most recently used first
};

}  // namespace spelt::internal::array_record

#endif  // SPELT_SRC_ARRAY_RECORD_CHUNK_CACHE_H_
