// IterDataset.marker_as_none(marker): each element that is the Python object `marker` (by
// identity) becomes None, the rest pass unchanged (the DataLoader's records that an operation
// turned into None, python/spelt/data_loader.py). A node whose function runs no Python: the
// identity check is C++, without the GIL. A batch above it asks the node below for whole
// batches with the marker as their None (IterNode::MakeBatchIterator, BatchRequest): worker
// processes then stack the DataLoader's batches themselves.
#ifndef SPELT_PYTHON_MARKER_AS_NONE_H_
#define SPELT_PYTHON_MARKER_AS_NONE_H_

#include <nanobind/nanobind.h>

#include "spelt/dataset.h"

namespace spelt::python {

namespace nb = nanobind;

// REQUIRES the GIL.
IterDataset MarkerAsNone(const IterDataset& parent, nb::handle marker);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_MARKER_AS_NONE_H_
