// spelt._core.Arena: a shared-memory region (an anonymous memfd) mapped into this process, the
// hand-off buffer between a worker process and the consumer (python/spelt/_workers).
//
// The worker writes a chunk's array buffers into a region of its arena; the consumer maps the
// same memfd and wraps each buffer in an ArenaView, a buffer-protocol object that numpy (via
// pickle protocol 5) turns into zero-copy arrays. A region is released when the last view of
// it dies: its id goes onto the arena's released queue, which the consumer drains and sends
// back to the worker so that the worker reuses the memory.
//
// Python API (all methods are safe to call from any Python thread; views may die anywhere):
//   Arena(fd, size)                 maps `size` bytes of file descriptor `fd` (MAP_SHARED);
//                                   the caller may close `fd` afterwards.
//   Arena.size                      mapped size in bytes.
//   Arena.write(offset, buffer)     copies a contiguous buffer to [offset, offset + len).
//   Arena.views(region, spans)      one writable ArenaView per (offset, size) in `spans`; when
//                                   all of them are gone, `region` (an int) is released.
//   Arena.take_released()           ids released since the last call (list of int).
// The mapping stays valid until the Arena and all its views are gone.
#ifndef SPELT_PYTHON_PY_ARENA_H_
#define SPELT_PYTHON_PY_ARENA_H_

#include <nanobind/nanobind.h>

namespace spelt::python {

// Adds Arena and ArenaView to module `m`.
void RegisterArena(nanobind::module_& m);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_ARENA_H_
