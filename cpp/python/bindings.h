// The parts of the spelt._core module, one Register function per concept (module.cc calls
// them in order). Engine types are exported under their C++/Grain names (MapDataset,
// IterDataset, DatasetIterator, Sampler, ...); python/spelt/_core.pyi describes them.
#ifndef SPELT_PYTHON_BINDINGS_H_
#define SPELT_PYTHON_BINDINGS_H_

#include <nanobind/nanobind.h>

#include "spelt/dataset.h"

namespace spelt::python {

namespace nb = nanobind;

// bind_errors.cc: the exception classes and the one translation of engine exceptions into
// Python ones (std::invalid_argument -> ValueError, std::out_of_range -> IndexError,
// std::system_error -> OSError with its errno, CorruptFileError -> spelt._core.CorruptFileError
// (a ValueError), UnsupportedError -> spelt._core.UnsupportedError (a NotImplementedError),
// EmptyShardError -> spelt._core.EmptyShardError (a ZeroDivisionError), NextIndexUnsupported ->
// spelt._core.NextIndexUnsupported (a NotImplementedError)).
void RegisterErrors(nb::module_& m);
// bind_functions.cc: index_shuffle and stack.
void RegisterFunctions(nb::module_& m);
// bind_dataset.cc: MapDataset and IterDataset handles and their factories.
void RegisterDatasets(nb::module_& m);
// bind_iterator.cc: DatasetIterator, the engine iterator owned by Python, and NEXT_INDEX_KEY
// (the key of a position state, spelt/node.h).
void RegisterIterator(nb::module_& m);
// Wraps an engine iterator for Python (GIL handling as in bind_iterator.cc).
nb::object WrapIterator(std::unique_ptr<DatasetIterator> it, bool calls_python);
// bind_sampler.cc: ShardOptions, Sampler (IndexSampler, SequentialSampler, python_sampler),
// sampler_dataset and range_source.
void RegisterSamplers(nb::module_& m);
// py_array_record.cc: NativeSource, ArrayRecordSource, ArrayRecordWriter, array_record_info.
void RegisterArrayRecord(nb::module_& m);
// py_tfrecord.cc: tfrecord_iter_dataset, detect_tfrecord_compression, TFRecordSource (a
// NativeSource), TFRecordWriter. After RegisterArrayRecord.
void RegisterTFRecord(nb::module_& m);
// py_arena.cc: Arena, ArenaView, UnpackedChunk and ChunkWriter (py_arena.h, py_chunk_writer.h).
void RegisterArena(nb::module_& m);
// process_executor.cc: process_prefetch (worker processes as a ChunkExecutor) and
// MapDataset.compute_chunk. After RegisterDatasets.
void RegisterProcessExecutor(nb::module_& m);
// bind_packing.cc: pack and concat_then_split (spelt/packing.h).
void RegisterPacking(nb::module_& m);
void RegisterStageStats(nb::module_& m);
// bind_thread_prefetch.cc: thread_prefetch, thread_prefetch_iterator, cache; sets the wait hook
// (spelt/blocking_wait.h). After RegisterIterator.
void RegisterThreadPrefetch(nb::module_& m);
// bind_interleave.cc: interleave and interleave_lazy. After RegisterDatasets.
void RegisterInterleave(nb::module_& m);
// bind_vision.cc: ImageOp, image_op and the image_* methods of the datasets. After
// RegisterDatasets and RegisterSamplers.
void RegisterVision(nb::module_& m);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_BINDINGS_H_
