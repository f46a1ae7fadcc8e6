// spelt._core.ChunkWriter: builds one chunk reply in a worker process (python/spelt/_workers,
// docs/workers.md), the elements stored in the worker's Arena (py_arena.h) and described by one
// record (arena_record.h).
//
// An element of plain types is tag-encoded (py_element_codec.h): a tag stream, and its
// arrays' bytes copied into one region of the arena. Any other element is pickled (protocol 5,
// by the Python function the worker passes), its large buffers out of band in its region; an
// element whose buffers find no room goes in band. The tag streams and pickles of the chunk go
// into one more region (inline in the record if none is free).
//
// Python API (Arena.writer() makes one; the arena must outlive it; one thread at a time):
//   .add(values, pickle_element) -> (count, error)
//       stores the elements `values` (a list; None for a filtered one) after those added
//       before; pickle_element(value, in_band) -> (bytes, buffers) pickles one that has no
//       tagged form (in_band: everything in the bytes; else buffers are the out-of-band ones).
//       If pickle_element raises for values[count], the elements before it are stored and
//       error is the exception (else None). ValueError after finish().
//   MapDataset.compute_chunk_into(writer, begin, count, pickle_element) (process_executor.cc)
//       computes elements and stores each with AddValue(): in one C++ call, the elements never
//       made into Python objects where they have a tagged form.
//   .finish() -> (record, nbytes)
//       the record (bytes), and the bytes the chunk occupies. ValueError if called twice.
#ifndef SPELT_PYTHON_PY_CHUNK_WRITER_H_
#define SPELT_PYTHON_PY_CHUNK_WRITER_H_

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arena_record.h"
#include "spelt/value.h"

namespace spelt::python {

namespace nb = nanobind;

class Arena;

class ChunkWriter {
 public:
  explicit ChunkWriter(Arena& arena) : arena_(arena) {}

  // Add() the elements as they are computed (a few at a time, so that large arrays are copied
  // while still in cache), then Finish() once.
  nb::tuple Add(nb::list values, nb::handle pickle_element);
  // Stores one engine element (nullopt: a filtered one) as Add() stores its Python object,
  // encoding it from the value itself where it has a tagged form (EncodeValue), else from
  // ToPython(value). Returns what pickle_element raised (then nothing is stored), or None.
  // REQUIRES: the GIL.
  nb::object AddValue(const std::optional<Value>& value, nb::handle pickle_element);
  nb::tuple Finish();

 private:
  nb::object AddOne(nb::handle value, nb::handle pickle_element);
  // A region of the arena for the bytes of `sources` (-1 when there are none), or nullopt
  // when the arena has no room.
  std::optional<int64_t> Region(const std::vector<std::pair<const void*, int64_t>>& sources);
  // Copies `sources` into `region` and records the element whose tag stream ends at the
  // stream's end (`kind`: tagged or pickled).
  void Store(ElementKind kind, const std::vector<std::pair<const void*, int64_t>>& sources,
             int64_t region);

  Arena& arena_;
  std::string stream_;
  RecordWords words_;
  int64_t nbytes_ = 0;
  bool finished_ = false;
};

void RegisterChunkWriter(nb::module_& m);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_CHUNK_WRITER_H_
