// The tagged encoding of elements that worker processes hand to the consumer (py_arena.h,
// docs/workers.md). An element made only of exact built-in types (None, bool, int that fits
// int64, float, str, bytes, list, tuple, dict with str keys), C-contiguous numpy.ndarrays of a
// Spelt dtype (host byte order) and numpy scalars of those dtypes is written as a compact tag
// stream plus its arrays' bytes; the consumer rebuilds it as an engine Value, its arrays
// pointing into the shared arena, without Python objects except for numpy scalars. Anything
// else (subclasses, namedtuples, Fortran-order arrays, other numpy dtypes, user classes,
// cycles or nesting deeper than 64) is pickled instead. Decoded values convert back (ToPython)
// to objects of the same types and values; objects shared inside an element come back as
// copies. Both REQUIRE the GIL (decoding only for numpy scalars, and takes it then).
#ifndef SPELT_PYTHON_PY_ELEMENT_CODEC_H_
#define SPELT_PYTHON_PY_ELEMENT_CODEC_H_

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "py_value.h"
#include "spelt/value.h"

namespace spelt::python {

// Appends the encoding of `obj` to *out and its arrays, in order, to *arrays (each sharing the
// numpy array's memory, kept alive by the Array's owner). Returns false, with *out and *arrays
// unchanged, if `obj` has no exact tagged form.
bool EncodeElement(nb::handle obj, std::string* out, std::vector<Array>* arrays);

// The encoding that EncodeElement(ToPython(value)) writes, made from the engine value itself:
// no Python object is made and no GIL is needed. Returns false, with *out and *arrays
// unchanged, where the Python object would need Python to encode or has no tagged form
// (Opaque leaves, tagged containers such as namedtuples or rebuilt pytree nodes, numpy
// scalars, nesting deeper than EncodeElement's); the caller then encodes ToPython(value).
bool EncodeValue(const Value& value, std::string* out, std::vector<Array>* arrays);

// Where the bytes of an encoded element's arrays are on the decoding side, in order.
struct ArrayBytes {
  const std::byte* data = nullptr;
  int64_t size = 0;
  std::shared_ptr<const void> owner;  // keeps `data` alive
};

// The element that EncodeElement wrote as `data`, with arrays over `arrays` (zero-copy); a
// top-level None (a filtered element) is nullopt. Throws std::invalid_argument if `data` is
// malformed or an array's size does not match its dtype and shape.
std::optional<Value> DecodeElement(std::string_view data, std::span<const ArrayBytes> arrays);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_ELEMENT_CODEC_H_
