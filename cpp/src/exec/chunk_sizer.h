// Internal: the chunk sizes of an executor (spelt/executor.h). Sizes double from `first` up to
// `max` elements, so the first elements come after little work, and are capped by bytes:
// once a chunk has been taken, later chunks hold about kChunkBytes of output (at least one
// element); until then at most kUnsizedChunk elements (the thread-pool executor submits its
// first chunk alone, with one element, so this bounds the chunks after a first one whose
// elements were all filtered out). Large elements (a batch of images, 1 MB and more) are then computed one or a few
// at a time, as a plain loop would: a chunk of 64 such batches is 50 MB written before the
// first is read, which misses the caches and, once freed, returns its pages to the kernel
// (glibc trims the heap above 2x its mmap threshold), so every chunk faults them in again.
// Chunks that wait (WorkTimer::kWaits, exec/work_timer.h: reads from a remote store, whose
// round trip one chunk's reads share) may grow up to kMaxWiden times larger in bytes (and in
// elements, for an executor that keeps no chunk in flight), so that more reads go out at once.
// Thread-compatible: used by the one thread that drives the ordered iterator.
#ifndef SPELT_SRC_EXEC_CHUNK_SIZER_H_
#define SPELT_SRC_EXEC_CHUNK_SIZER_H_

#include <algorithm>
#include <cstdint>

#include "spelt/executor.h"

namespace spelt::internal {

class ChunkSizer {
 public:
  // About this many output bytes per chunk once an element's size is known.
  static constexpr int64_t kChunkBytes = int64_t{1} << 20;
  // At most this many elements per chunk while no element's size is known.
  static constexpr int64_t kUnsizedChunk = 8;

  // REQUIRES: 1 <= first <= max.
  ChunkSizer(int64_t first, int64_t max) : next_(first), max_(max) {}

  // The size of the next chunk to submit (>= 1).
  int64_t Next();
  // Learns the element size from a computed chunk: the bytes (ValueBytes) of its first
  // element that a filter kept. Chunks with no such element teach nothing.
  void Observe(const ChunkResult& chunk);
  // Changes the element limit from now on (sizes keep doubling up to it). REQUIRES: max >= 1.
  void SetMax(int64_t max) {
    max_ = max;
    next_ = std::min(next_, max_ * widen_elements_);
  }
  // Chunks were seen to wait: doubles the byte limit, and the element limit too if
  // `elements`, up to kMaxWiden times the first ones.
  void Widen(bool elements);
  // Chunks were seen not to wait: halves what Widen() added.
  void Narrow();

  static constexpr int64_t kMaxWiden = 64;

 private:
  int64_t next_, max_;
  int64_t widen_ = 1;           // the byte limit's factor, 1 to kMaxWiden
  int64_t widen_elements_ = 1;  // the element limit's: 1, or widen_
  int64_t element_bytes_ = -1;  // -1: not known yet (0 for elements of no array bytes)
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_EXEC_CHUNK_SIZER_H_
