// Adapters that let Python objects play engine roles: Python callables as MapFn & co., and
// Python data sources, samplers, MapDatasets and IterDatasets as engine nodes. Every adapter
// takes the GIL when it calls Python, and the sources, samplers and nodes say that they call
// Python (CallsPython(), spelt/node.h); calls may come from several threads at once.
// Python exceptions propagate unchanged (as nb::python_error).
#ifndef SPELT_PYTHON_PY_ADAPTERS_H_
#define SPELT_PYTHON_PY_ADAPTERS_H_

#include <memory>

#include "py_value.h"
#include "spelt/dataset.h"
#include "spelt/sampler.h"
#include "spelt/source.h"

namespace spelt::python {

// fn(element) -> element.
MapFn PyMapFn(nb::handle fn);
// fn(element, rng) -> element; rng is the engine's Philox stream for the element (counter
// [0, 0, 0, global index] on a MapDataset, [0, 0, 0, element count] on an IterDataset) as a
// numpy Generator (spelt._callables.philox_generator).
RandomMapFn PyRandomMapFn(nb::handle fn);
// fn(index, element) -> element.
MapWithIndexFn PyMapWithIndexFn(nb::handle fn);
// bool(fn(element)).
FilterFn PyFilterFn(nb::handle fn);
// list(fn(element)).
FlatMapFn PyFlatMapFn(nb::handle fn);
// fn(list_of_elements) -> batch.
BatchFn PyBatchFn(nb::handle fn);
// fn(message: str), called with the GIL taken (DatasetOptions::warn).
std::function<void(const std::string&)> PyWarnFn(nb::handle fn);

// Any object with __len__ and __getitem__(int). An exception from __getitem__ gets a note
// naming the record index and the source. Repr() follows Grain's _source_repr. GetMany holds
// the GIL once per chunk and uses the batched read _getitems / __getitems__ when the object
// has one. A numpy array that NumpyArraySource() accepts (py_array_source.h) becomes that
// native source instead, read without the GIL.
std::shared_ptr<const RandomAccessSource> PySource(nb::handle source);
// Any object with __getitem__(index) -> RecordMetadata (record_key) and optional __len__
// (else found by binary search for the first IndexError, as Grain does).
std::shared_ptr<const Sampler> PySampler(nb::handle sampler, ShardOptions shard_options);
// The engine nodes of a user dataset's parents (Grain's `parents`): what later default seeds
// derive from (DatasetNode::DefaultSeed) and what checks such as batch-after-filter walk, as
// if the Python stage were a native one.
using ParentNodes = std::vector<std::shared_ptr<const DatasetNode>>;

// A user's MapDataset subclass: __len__ and __getitem__(global index) -> element or None.
MapDataset PyMapDataset(nb::handle dataset, ParentNodes parents = {});
// An object with __next__, get_state() and set_state(state) as an engine iterator (Grain's
// CheckpointableIterator).
std::unique_ptr<DatasetIterator> PyDatasetIterator(nb::handle it);
// A user's IterDataset subclass: __iter__() returning an iterator with __next__, get_state()
// and set_state(state).
IterDataset PyIterDataset(nb::handle dataset, ParentNodes parents = {});

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_ADAPTERS_H_
