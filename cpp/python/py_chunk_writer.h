// spelt._core.ChunkWriter: builds one chunk reply in a worker process (python/spelt/_workers,
// docs/workers.md), the elements stored in the worker's Arena (py_arena.h) and described by one
// record (arena_record.h).
//
// An element of plain types is encoded natively (py_element_codec.h): a tag stream, and its
// arrays' bytes copied into one region of the arena. Any other element is pickled (protocol 5,
// by the Python function the worker passes), its large buffers out of band in its region; an
// element whose buffers find no room goes in band. The tag streams and pickles of the chunk go
// into one more region (inline in the record if none is free).
//
// Python API (Arena.writer() makes one; the arena must outlive it; one thread at a time):
//   .add(values, pickle_element) -> (count, error)
//       stores the elements `values` (a list; None for a filtered one) after those added
//       before; pickle_element(value, in_band) -> (bytes, buffers) pickles one that has no
//       native form (in_band: everything in the bytes; else buffers are the out-of-band ones).
//       If pickle_element raises for values[count], the elements before it are stored and
//       error is the exception (else None). ValueError after finish().
//   .finish() -> (record, nbytes)
//       the record (bytes), and the bytes the chunk occupies. ValueError if called twice.
#ifndef SPELT_PYTHON_PY_CHUNK_WRITER_H_
#define SPELT_PYTHON_PY_CHUNK_WRITER_H_

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>

#include "arena_record.h"

namespace spelt::python {

namespace nb = nanobind;

class Arena;

class ChunkWriter {
 public:
  explicit ChunkWriter(Arena& arena) : arena_(arena) {}

  // Add() the elements as they are computed (a few at a time, so that large arrays are copied
  // while still in cache), then Finish() once.
  nb::tuple Add(nb::list values, nb::handle pickle_element);
  nb::tuple Finish();

 private:
  nb::object AddOne(nb::handle value, nb::handle pickle_element);

  Arena& arena_;
  std::string stream_;
  RecordWords words_;
  int64_t nbytes_ = 0;
  bool finished_ = false;
};

void RegisterChunkWriter(nb::module_& m);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_CHUNK_WRITER_H_
