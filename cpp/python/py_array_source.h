// A numpy array as a native data source (used by PySource() in py_adapters.h).
#ifndef SPELT_PYTHON_PY_ARRAY_SOURCE_H_
#define SPELT_PYTHON_PY_ARRAY_SOURCE_H_

#include <memory>

#include "py_value.h"
#include "spelt/source.h"

namespace spelt::python {

// Record i of the returned source is row arr[i]: an Array of the row's dtype and shape
// (arr.shape[1:]) that views the ndarray's memory (no copy) and keeps it alive. Get / GetMany
// never touch Python, so they run without the GIL and from many threads at once (not
// CallsPython()); GetMany gathers the row views of a whole chunk. Only the release of the last
// reference to the ndarray (when the source and every row are gone) takes the GIL.
// Returns null unless `obj` is exactly a numpy.ndarray (no subclass such as np.memmap), C
// contiguous, writeable, with ndim >= 2 and a dtype Spelt has in native byte order: the cases
// where arr[i] is a writeable ndarray equal to the row (a 1-d array's items are numpy
// scalars, which this source could not return). Repr() is Python's str(type(arr)), as for any Python source.
// REQUIRES: the GIL.
std::shared_ptr<const RandomAccessSource> NumpyArraySource(nb::handle obj);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_ARRAY_SOURCE_H_
