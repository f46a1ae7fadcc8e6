"""Grain's DataLoader: DataSource + Sampler + operations, assembled from Spelt datasets.

``DataLoader(*, data_source, sampler, operations=(), worker_count=0, worker_buffer_size=1,
shard_options=None, read_options=None, enable_profiling=False)`` follows Grain 0.2.18
(grain/_src/python/data_loader.py):

* Host shard s of S reads sampler indices g = l * S + s, l = 0, 1, ...; the record is
  ``data_source[sampler[g].record_key]``. The engine reads a chunk of records at a time: its
  record keys (Spelt's samplers, ``sampler._spelt_sampler()``, in C++; any other object
  following Grain's sampler protocol through one call per index, its length from ``len()`` or
  else the first index raising IndexError), then one batched read of the source.
* ``RandomMap`` gets the record's generator, Grain's ``metadata.rng``: for Spelt's samplers
  Philox keyed by seed + g as Grain's samplers make it (None without a seed), so results do
  not depend on workers or batching; all RandomMaps of a record share it.
* Operations up to the first Batch/FlatMap run per index on the random-access pipeline
  (in ``worker_count`` worker processes when it is above 0, see docs/workers.md); the rest
  run on the stream, in this process. Batching is always after ordering, so batch
  composition never depends on worker_count (unlike Grain; see docs/compatibility.md).
* Iterator state is Grain's JSON layout, version 2 (bytes). It is a global position: it
  restores with any worker_count. ``set_state`` raises ValueError if the state is malformed
  or comes from a pipeline with another sampler or data source (compared by repr).
"""

from __future__ import annotations

import json
import os
from typing import Any, Awaitable, Callable, Sequence

import numpy as np

from spelt import _args
from spelt import _base
from spelt import _callables
from spelt import _checkpoint_io
from spelt import _core
from spelt import dataset_options
from spelt import operations as operations_lib
from spelt import options as options_lib
from spelt import packing
from spelt import samplers as samplers_lib
from spelt import sharding
from spelt import transforms
from spelt.transformations import source

_VERSION = 2
_PER_INDEX = (transforms.Map, transforms.RandomMap, transforms.MapWithIndex, transforms.Filter)


def _source_repr(source: Any) -> str:
    if isinstance(source, (list, tuple, np.ndarray)):
        return str(type(source))
    return repr(source)


def _native_sampler(sampler: Any) -> Any:
    """The engine sampler of Spelt's samplers (``sampler._spelt_sampler()``), else None."""
    method = getattr(sampler, "_spelt_sampler", None)
    return method() if method is not None else None


def _engine_sampler(sampler: Any, shard: Any) -> Any:
    """The sampler the engine reads: Spelt's own, or any object following Grain's sampler
    protocol through the engine's adapter (``__getitem__`` -> RecordMetadata, optional
    ``__len__``)."""
    native = _native_sampler(sampler)
    return native if native is not None else _core.python_sampler(sampler, shard)


class _RecordOps:
    """The DataLoader's per-record operations (those before the first Batch/FlatMap) as one
    ``map_with_index`` function of (local index, element): Map, Filter (False or None drops the
    record), MapWithIndex (called with the global sampler index g) and RandomMap.

    Every RandomMap of a record gets the record's generator, Grain's ``metadata.rng``, so a
    later RandomMap continues where the previous one stopped. For Spelt's samplers the engine
    gives its key (seed + g) and ``_callables.philox_generator`` builds it; other samplers are asked for
    ``sampler[g].rng``. Picklable (the engine objects are rebuilt after unpickling)."""

    # _DROPPING_MAP: a Map whose None drops the record (``op.drops_none``, e.g. spelt.vision's
    # DecodeImage(on_error="skip")), as a Filter would; a plain Map's None is yielded (Grain).
    _MAP, _FILTER, _WITH_INDEX, _RANDOM, _DROPPING_MAP = range(5)

    def __init__(self, operations: Sequence[Any], sampler: Any, shard: sharding.ShardOptions):
        self._operations = list(operations)
        self._steps = []
        for op in operations:  # Grain's dispatch order (data_loader._apply_transform_to_dataset)
            if isinstance(op, transforms.Map):
                kind = self._DROPPING_MAP if getattr(op, "drops_none", False) else self._MAP
                self._steps.append((kind, op.map))
            elif isinstance(op, transforms.RandomMap):
                self._steps.append((self._RANDOM, op.random_map))
            elif isinstance(op, transforms.MapWithIndex):
                self._steps.append((self._WITH_INDEX, op.map_with_index))
            else:
                self._steps.append((self._FILTER, op.filter))
        self._sampler = sampler
        self._shard = shard
        self._engine = None

    def _engine_objects(self) -> tuple[Any, Any]:
        """(engine shard options, engine sampler or None for a sampler written in Python)."""
        if self._engine is None:
            self._engine = (sharding.engine_options(self._shard), _native_sampler(self._sampler))
        return self._engine

    def _spelt_native_node(self, parent_node: Any) -> Any:
        """The engine node that runs these operations natively, when all are image ops on one
        field (spelt.vision, spelt/image_ops.h) and, if any is random, Spelt's sampler has a
        seed; None otherwise (they run as this Python function). Its random ops share the
        record's generator, as here."""
        ops = [getattr(op, "_spelt_image_op", lambda: None)() for op in self._operations]
        if not ops or None in ops or len({op.field for op in self._operations}) != 1:
            return None
        shard, native = self._engine_objects()
        if native is None or (any(op.random for op in ops) and native.rng_key(0) is None):
            return None
        return parent_node.image_record_map(ops, native, shard)

    def _record_rng(self, g: int) -> np.random.Generator | None:
        native = self._engine_objects()[1]
        if native is None:
            return self._sampler[g].rng
        key = native.rng_key(g)
        return None if key is None else _callables.philox_generator(key, 0)

    def __call__(self, local_index: int, element: Any) -> Any:
        """The record after the operations; None if a Filter (or a dropping Map) dropped it,
        NONE_ELEMENT if another operation returned None (Grain yields that None: see
        _NoneElementsIterDataset)."""
        g = rng = None  # the record's global sampler index and generator, made when first needed
        rng_made = False
        for kind, fn in self._steps:
            if kind == self._MAP:
                element = fn(element)
            elif kind == self._DROPPING_MAP:
                element = fn(element)
                if element is None:
                    return None
            elif kind == self._FILTER:
                if not fn(element):
                    return None
            else:
                if g is None:
                    g = self._engine_objects()[0].global_index(local_index)
                if kind == self._WITH_INDEX:
                    element = fn(g, element)
                else:
                    if not rng_made:
                        rng, rng_made = self._record_rng(g), True
                    if rng is not None:
                        element = fn(element, rng)
                        continue
                    try:
                        element = fn(element, None)
                    except (AttributeError, TypeError) as e:
                        _note_missing_seed(e, fn)
                        raise
        return NONE_ELEMENT if element is None else element

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_engine"] = None
        return state


def _note_missing_seed(error: BaseException, fn: Callable) -> None:
    """Adds to an error raised by a RandomMap that got rng=None (its DataLoader's sampler has no
    seed, as in Grain) a note that names the operation and says what is missing."""
    op = type(fn.__self__).__name__ if hasattr(fn, "__self__") else getattr(fn, "__name__", fn)
    error.add_note(
        f"DataLoader: the RandomMap operation {op} got rng=None because the sampler has no"
        " seed: pass seed=... to the sampler (e.g. spelt.samplers.IndexSampler(..., seed=0))"
    )


class _NoneElement:
    """A record that an operation turned into None. On the random-access pipeline None means
    "filtered out", so the per-record operations hand this marker on instead, and the stream
    turns it back into None (as Grain's DataLoader yields it). Pickles to the singleton, so
    that records computed by worker processes keep it."""

    def __reduce__(self):
        return "NONE_ELEMENT"


NONE_ELEMENT = _NoneElement()


class _NoneElementsIterDataset(_base.ParentSpec, _base.OpIterDataset):
    """The DataLoader's stream after its per-record operations, with each NONE_ELEMENT turned
    into None by the engine (``_core.IterDataset.marker_as_none``: an identity check in C++, no
    Python call per record). Output and state are otherwise the parent's."""

    _build = staticmethod(_core.IterDataset.marker_as_none)


def _entered(source: Any) -> Any:
    """The data source entered if it is a context manager (grain#936: the DataLoader uses it as
    one), else None; the caller exits it. A Hugging Face ``datasets.Dataset`` is not entered:
    its ``__exit__`` deletes its data, so a second iterator (the next epoch) would fail."""
    exit_fn = getattr(type(source), "__exit__", None)
    if exit_fn is None or not hasattr(source, "__enter__"):
        return None
    if getattr(exit_fn, "__module__", "").split(".")[0] == "datasets":
        return None
    source.__enter__()
    return source


class _SamplerMapDataset(_base.MapDataset):
    """Element l: data_source[sampler[l * shard_count + shard_index].record_key], read by the
    engine (spelt/sampler.h SamplerDataset): one batched read per chunk."""

    def __init__(self, data_source: Any, sampler: Any, shard: sharding.ShardOptions):
        super().__init__()
        self._data_source = data_source
        self._sampler = sampler
        self._shard = shard

    @property
    def _spelt_data_source(self) -> Any:
        """The source an iterator's ``close()`` closes (``_base.closable_sources``)."""
        return self._data_source

    def _make_node(self):
        shard = sharding.engine_options(self._shard)
        return _core.sampler_dataset(
            _engine_sampler(self._sampler, shard),
            source.native_or_python(self._data_source),
            shard,
        )


def _determine_worker_count(worker_count: int | None) -> int:
    if worker_count is None:
        return os.cpu_count() or 1
    if worker_count < 0:
        raise ValueError(
            "Worker count should be greater than or equal zero."
            f"Current worker_count is {worker_count}."
        )
    return worker_count


class DataLoader:
    """Loads records through a sampler and applies operations (Grain's DataLoader)."""

    def __init__(
        self,
        *,
        data_source: Any,
        sampler: Any,
        operations: Sequence[Any] = (),
        worker_count: int | None = 0,
        worker_buffer_size: int = 1,
        shard_options: sharding.ShardOptions | None = None,
        read_options: options_lib.ReadOptions | None = None,
        enable_profiling: bool = False,
        worker_backend: Any = None,
        autotune: bool = False,
        ram_budget_mb: int | None = None,
    ):
        """Grain's arguments, and Spelt's: ``worker_backend``, a
        ``spelt.experimental.RayOptions`` to compute the operations before the first Batch on
        Ray actors instead of worker processes (then worker_count must be 0; the output and the
        state are those of worker_count=0; docs/distributed.md); ``autotune=True``, to pick
        and adapt the worker count (at most worker_count; 0: the CPU count) and buffer under
        ``ram_budget_mb`` while running (``IterDataset.mp_prefetch``; same output and state)."""
        _args.data_source(data_source, "DataLoader: data_source")
        # a list of RecordMetadata is a sampler (Grain's protocol); a list of indices is not
        if not hasattr(sampler, "__getitem__") or (
            isinstance(sampler, (list, tuple, range, np.ndarray))
            and len(sampler)
            and not hasattr(sampler[0], "record_key")
        ):
            raise TypeError(
                "DataLoader: sampler must be a sampler (spelt.samplers.IndexSampler,"
                " SequentialSampler, or an object whose __getitem__ returns a RecordMetadata),"
                f" got {type(sampler).__name__}; for a list of record indices, pass a data"
                " source holding those records"
            )
        _args.options_arg(read_options, options_lib.ReadOptions, "DataLoader: read_options")
        worker_buffer_size = _args.int_arg(worker_buffer_size, "DataLoader: worker_buffer_size")
        if worker_buffer_size < 0:
            raise ValueError(
                "Worker buffer size must be greater than or equal zero."
                f"Current worker_buffer_size is {worker_buffer_size}."
            )
        worker_count = _determine_worker_count(
            _args.int_arg(worker_count, "DataLoader: worker_count", optional=True)
        )
        if worker_backend is not None and worker_count:
            raise ValueError(
                f"DataLoader: worker_backend={worker_backend!r} computes the records; pass"
                f" worker_count=0 with it, not {worker_count}"
            )
        self._worker_backend = worker_backend
        self._autotune = {"autotune": autotune, "ram_budget_mb": ram_budget_mb}
        # an iterator or generator is read once; Grain's *Operation classes become transforms
        operations = [operations_lib.as_transformation(op) for op in operations]
        if shard_options is None:
            shard_options = getattr(sampler, "_shard_options", None)
            if not isinstance(shard_options, sharding.ShardOptions):
                raise ValueError(
                    "No shard options were provided to the DataLoader. Pass shard_options= (for"
                    " example spelt.sharding.NoSharding())."
                )
        for op in operations:
            if isinstance(op, transforms.Batch) and op.batch_size <= 0:
                raise ValueError(f"batch_size must be positive, got {op.batch_size}")
        self._data_source = data_source
        self._sampler = sampler
        self._operations = list(operations)
        self._shard_options = shard_options
        self._read_options = read_options or options_lib.ReadOptions()
        self._multiprocessing_options = options_lib.MultiprocessingOptions(
            num_workers=worker_count,
            per_worker_buffer_size=worker_buffer_size,
            enable_profiling=enable_profiling,
        )
        self._per_index_count = 0
        while self._per_index_count < len(self._operations) and isinstance(
            self._operations[self._per_index_count], _PER_INDEX
        ):
            self._per_index_count += 1
        # Stream operations with state of their own (FlatMap, and RandomMap / MapWithIndex after
        # a Batch) make the state the raw dataset state, as Grain does for FlatMap.
        self._raw_dataset_state = any(
            isinstance(
                op,
                (
                    transforms.FlatMap,
                    transforms.RandomMap,
                    transforms.MapWithIndex,
                    packing.PackAndBatchOperation,
                ),
            )
            for op in self._operations[self._per_index_count :]
        )
        self._dataset = self._create_dataset()

    @property
    def multiprocessing_options(self) -> options_lib.MultiprocessingOptions:
        return self._multiprocessing_options

    def _create_dataset(self) -> _base.IterDataset:
        ds: Any = _SamplerMapDataset(self._data_source, self._sampler, self._shard_options)
        ops = self._operations
        if self._per_index_count:
            ds = ds.map_with_index(
                _RecordOps(ops[: self._per_index_count], self._sampler, self._shard_options)
            )
        ds = ds.to_iter_dataset(self._read_options)
        if self._per_index_count:
            ds = _NoneElementsIterDataset(ds, NONE_ELEMENT)
        for position, op in enumerate(ops[self._per_index_count :]):
            if isinstance(op, transforms.RandomMap):
                # Stream-level: Philox keyed by (sampler seed, position of the op), so that two such
                # RandomMaps draw different numbers. The seed is the generator key of index 0.
                native = _native_sampler(self._sampler)
                sampler_seed = (native.rng_key(0) if native is not None else None) or 0
                entropy = [sampler_seed, position]
                seed = int(np.random.SeedSequence(entropy).generate_state(1, np.uint32)[0])
                ds = ds.random_map(op, seed=seed)
            elif isinstance(
                op,
                (
                    transforms.Batch,
                    transforms.Map,
                    transforms.Filter,
                    transforms.MapWithIndex,
                    transforms.FlatMap,
                ),
            ):
                ds = ds.apply(op)
            elif isinstance(op, packing.PackAndBatchOperation):
                ds = op.apply_to(ds)  # the engine packs; the state is the packing iterator's
            else:  # a legacy operation on an iterator of Records (TypeError if not callable)
                earlier = ops[: self._per_index_count + position]
                keyless = any(operations_lib.drops_record_key(o) for o in earlier)
                ds = operations_lib.OperationIterDataset(
                    ds, op, self._sampler, self._shard_options, keyless
                )
        # Grain's DataLoader checks no filter thresholds: its Filter operations are not dataset
        # filters. enable_profiling turns on the per-stage execution summary.
        options = dataset_options.DatasetOptions(filter_warn_threshold_ratio=None)
        if self._multiprocessing_options.enable_profiling:
            options = dataset_options.DatasetOptions(
                filter_warn_threshold_ratio=None,
                execution_tracking_mode=dataset_options.ExecutionTrackingMode.STAGE_TIMING,
            )
        return _base.WithOptionsIterDataset(
            ds.mp_prefetch(self._worker_backend or self._multiprocessing_options, **self._autotune),
            options,
        )

    def __iter__(self) -> DataLoaderIterator:
        return DataLoaderIterator(
            self._dataset.__iter__(),
            self._data_source,
            self._to_loader_state,
            self._from_loader_state,
        )

    # State conversion between the engine's position and Grain's layout.
    def _to_loader_state(self, dataset_state: dict[str, Any]) -> dict[str, Any]:
        if self._raw_dataset_state:
            return dataset_state
        n = dataset_state[_core.NEXT_INDEX_KEY]
        s, count = self._shard_options.shard_index, self._shard_options.shard_count
        workers = self._multiprocessing_options.num_workers
        virtual = max(workers, 1)
        global_workers = virtual * count
        last_seen = {}
        for w in range(virtual):
            next_w = (n - w + virtual - 1) // virtual if n > w else 0
            last_seen[str(w)] = s - global_workers + w * count + next_w * global_workers
        return {
            "version": _VERSION,
            "last_seen_indices": last_seen,
            "last_worker_index": (n % virtual) - 1 if workers else -1,
            "worker_count": workers,
            "sampler": repr(self._sampler),
            "data_source": _source_repr(self._data_source),
        }

    def _from_loader_state(self, state: Any) -> dict[str, Any]:
        if self._raw_dataset_state:
            return state
        if not isinstance(state, dict):
            raise ValueError(f"DataLoader state must be a JSON object, got {type(state).__name__}")
        for key, kind in (
            ("version", int),
            ("last_seen_indices", dict),
            ("worker_count", int),
            ("sampler", str),
            ("data_source", str),
        ):
            if not isinstance(state.get(key), kind):
                raise ValueError(f"DataLoader state: missing or invalid field {key!r}")
        if state["version"] != _VERSION:
            raise ValueError(f"DataLoader state: unsupported version {state['version']}")
        if state["sampler"] != repr(self._sampler):
            raise ValueError(
                "Sampler in checkpoint does not match dataloader sampler.\n"
                f"sampler in checkpoint: {state['sampler']}\n"
                f"sampler in dataloader: {self._sampler!r}"
            )
        if state["data_source"] != _source_repr(self._data_source):
            raise ValueError(
                "DataSource in checkpoint does not match datasource in dataloader.\n"
                f"data source in checkpoint: {state['data_source']}\n"
                f"data source in dataloader: {_source_repr(self._data_source)}"
            )
        workers = state["worker_count"]
        if workers < 0:
            raise ValueError(f"DataLoader state: negative worker_count {workers}")
        s, count = self._shard_options.shard_index, self._shard_options.shard_count
        last_seen = state["last_seen_indices"]
        virtual = max(workers, 1)
        global_workers = virtual * count
        consumed = []  # records of this shard each worker has consumed
        for w in range(virtual):
            value = last_seen.get(str(w))
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    f"DataLoader state: last_seen_indices[{w!r}] missing or not an int"
                )
            consumed.append((value + global_workers - s - w * count) // global_workers)
        n = sum(consumed)
        # Records are dealt round-robin to the workers; the state is a position only if what
        # the workers consumed is the first n records. Grain's workers batch their own records
        # and advance unevenly, so its state can hold a set with gaps, which Spelt's global
        # position cannot resume without repeating or skipping records.
        if any(c != (n - w + virtual - 1) // virtual for w, c in enumerate(consumed)):
            raise ValueError(
                f"DataLoader state: last_seen_indices {last_seen} of {workers} workers mark "
                "records consumed with gaps (a Grain checkpoint taken while its workers were "
                "unevenly advanced); Spelt resumes from one global position and would repeat "
                "or skip records. Restore a checkpoint taken after a multiple of worker_count "
                "batches, or with worker_count=0 (docs/compatibility.md)."
            )
        return {_core.NEXT_INDEX_KEY: n}


class DataLoaderIterator:
    """Iterator of a DataLoader; state is Grain's JSON (bytes). Calls from several threads are
    serialised (see DatasetIterator)."""

    def __init__(
        self,
        iterator: Any,
        data_source: Any,
        to_loader_state: Callable[[dict[str, Any]], Any],
        from_loader_state: Callable[[Any], dict[str, Any]],
    ):
        """iterator: the DatasetIterator of the loader's pipeline; to/from_loader_state convert
        its state to and from Grain's DataLoader layout."""
        self._iterator = iterator
        self._to_loader_state, self._from_loader_state = to_loader_state, from_loader_state
        # A data source that is a context manager is entered for the life of the iterator
        # (until close(), the end of the stream, or garbage collection).
        self._entered = _entered(data_source)

    def __iter__(self) -> DataLoaderIterator:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._iterator)
        except StopIteration:
            self._exit_source()
            raise

    def _exit_source(self) -> None:
        entered, self._entered = getattr(self, "_entered", None), None  # None if __init__ failed
        if entered is not None:
            entered.__exit__(None, None, None)

    def __del__(self):
        self._exit_source()

    def get_state(self) -> bytes:
        state = self._to_loader_state(self._iterator.get_state())
        return json.dumps(state, indent=4).encode()

    def set_state(self, state: bytes) -> None:
        try:
            decoded = json.loads(state.decode() if isinstance(state, (bytes, bytearray)) else state)
        except (UnicodeDecodeError, json.JSONDecodeError, TypeError) as e:
            raise ValueError(f"DataLoader state is not valid JSON: {e}") from e
        self._iterator.set_state(self._from_loader_state(decoded))

    def start_prefetch(self) -> None:
        """Starts read-ahead early; idempotent."""
        self._iterator.start_prefetch()

    async def save(self, directory: Any) -> Awaitable[None]:
        """Orbax v1's checkpointable ``save`` (a coroutine, as Grain's): awaited, it takes the
        state (``get_state()``) and returns the coroutine writing it to
        ``directory/process_<i>-of-<n>.json`` (see ``DatasetIterator.save``)."""
        return _checkpoint_io.background_save(directory, self.get_state().decode())

    async def load(self, directory: Any) -> Awaitable[None]:
        """Orbax v1's checkpointable ``load`` (a coroutine, as Grain's): awaited, it returns the
        coroutine that reads this process's state file and calls ``set_state`` with it;
        ValueError if the file is missing."""
        return _checkpoint_io.background_load(directory, lambda text: self.set_state(text.encode()))

    def close(self) -> None:
        self._iterator.close()
        self._exit_source()

    def __str__(self) -> str:
        return f"PyGrainDatasetIterator(state={self.get_state().decode()})"


def load(
    source: Any,
    *,
    num_epochs: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    shard_options: sharding.ShardOptions = sharding.NoSharding(),
    transformations: Sequence[Any] = (),
    batch_size: int | None = None,
    drop_remainder: bool = False,
    worker_count: int | None = 0,
    read_options: options_lib.ReadOptions | None = None,
) -> DataLoader:
    """Grain's ``load``: a DataLoader over an IndexSampler, with an optional final Batch."""
    sampler = samplers_lib.IndexSampler(
        num_records=len(source),
        shard_options=shard_options,
        shuffle=shuffle,
        num_epochs=num_epochs,
        seed=seed,
    )
    operations = list(transformations)
    if batch_size is not None:
        operations.append(transforms.Batch(batch_size, drop_remainder=drop_remainder))
    return DataLoader(
        data_source=source,
        sampler=sampler,
        operations=operations,
        worker_count=worker_count,
        read_options=read_options,
    )
