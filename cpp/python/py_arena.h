// spelt._core.Arena: a shared-memory region (an anonymous memfd) mapped into this process, the
// hand-off buffer between a worker process and the consumer (python/spelt/_workers,
// docs/workers.md).
//
// A worker stores the elements of a chunk one after the other with a ChunkWriter
// (py_chunk_writer.h), each element's arrays in one region (RegionAllocator,
// region_allocator.h), and sends the record that describes them (arena_record.h).
// The consumer's Unpack() rebuilds the elements: tagged ones as engine Values whose arrays
// point into the arena (no Python objects at all: a batch copies them straight from the arena);
// pickled ones with pickle.loads and ArenaViews (writable buffer-protocol objects over the
// mapping) as out-of-band buffers, so their numpy arrays are zero-copy views too. When the last
// array or view of an element's region dies (in any thread), the region id goes onto the
// arena's released queue; the consumer drains it into its next request to the worker, which
// Free()s it. The stream region is released as soon as it has been read.
//
// Python API (methods are safe from any Python thread; arrays and views may die anywhere):
//   Arena(fd, size)            maps `size` bytes of `fd` (MAP_SHARED); `fd` may be closed after.
//                              ValueError for size <= 0, OSError if mmap fails.
//   Arena.size                 mapped size in bytes.
//   Arena.allocate(length)     worker: offset of a new region of `length` bytes, or None.
//   Arena.free(offsets)        worker: returns regions (offsets from allocate) to the free space.
//   Arena.writer() -> ChunkWriter
//                              worker: builds one chunk reply (py_chunk_writer.h).
//   Arena.unpack(record) -> UnpackedChunk
//                              consumer: the elements of a record; len() of them, and .error if
//                              unpickling the next one raised (the rest are dropped).
//                              ValueError/IndexError for a corrupt record.
//   Arena.discard(record)      consumer: releases the regions of a record nobody will read.
//   Arena.take_released()      consumer: region ids released since the last call (list of int).
// The mapping stays valid until the Arena and all its arrays and views are gone.
#ifndef SPELT_PYTHON_PY_ARENA_H_
#define SPELT_PYTHON_PY_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "py_value.h"
#include "region_allocator.h"
#include "spelt/value.h"

namespace spelt::python {

// The elements of one chunk reply, as Arena.unpack rebuilt them, or as a Ray actor returned them
// (UnpackedChunk(values)); Python: len() and .error.
// values[k] is nullopt where a filter removed the element; tag-encoded elements are engine
// Values whose arrays point into the arena, pickled ones are Python objects (PyOpaque).
struct UnpackedChunk {
  std::vector<std::optional<Value>> values;
  nb::object error = nb::none();  // what loading element values.size() raised, else None
};

class SharedMapping;  // the mmap (py_arena.cc)
class ReleasedQueue;

class Arena {
 public:
  Arena(int fd, int64_t size);

  int64_t size() const;
  // The start of the region or span at `offset`. REQUIRES: inside the arena.
  std::byte* at(int64_t offset) const;

  // Worker side (one thread at a time).
  std::optional<int64_t> Allocate(int64_t length) { return allocator_.Allocate(length); }
  void Free(const std::vector<int64_t>& offsets);

  // Consumer side.
  UnpackedChunk Unpack(nb::bytes record);
  void Discard(nb::bytes record);
  std::vector<int64_t> TakeReleased();

 private:
  std::shared_ptr<SharedMapping> mapping_;
  std::shared_ptr<ReleasedQueue> released_;
  RegionAllocator allocator_;  // used by the worker only
};

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_ARENA_H_
