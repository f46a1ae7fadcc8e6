"""The Dataset API's bases: MapDataset, IterDataset and DatasetIterator, run by libspelt.

A dataset here is a thin, picklable Python description; the pipeline itself is a chain of
engine nodes (``spelt._core``) built from it on first use. Per-element work (indexing,
shuffling, read-ahead, batching, bookkeeping) runs in C++ with the GIL released; only user
callables and Python data sources are called back under the GIL.

This module imports no operation. Each transformation lives in ``spelt.transformations`` (one
module per operation, as Grain lays them out) and imports only this module; the methods that
build one (``ds.map``, ``ds.shuffle``, ...) find its class in a class attribute of the base
(``_Map``, ``_Shuffle``, ...), which ``spelt.dataset`` fills in. The tree helpers
(:func:`with_parents`, :func:`rewrite`) are the one place that rebuilds a dataset tree.

Semantics follow Grain 0.2.x (grain/_src/python/dataset/dataset.py): a MapDataset is random
access by global index (index >= len reads later epochs), ``filter`` yields None for dropped
elements, ``seed()`` provides default seeds, iterator state is a small JSON-compatible dict
in Grain's layout (e.g. ``{"next_index": n}`` for ``to_iter_dataset``).
"""

from __future__ import annotations

import abc
import builtins
import copy
import json
from typing import Any, Awaitable, Callable, Generic, Iterator, Mapping, Sequence, TypeVar

from spelt import _args
from spelt import _callables
from spelt import _checkpoint_io
from spelt import _core
from spelt import dataset_options
from spelt import element_spec
from spelt import options as options_lib
from spelt import transforms


class Node:
    """Mixin: a lazily built engine node, dropped when pickled and rebuilt after."""

    _node_cache: Any = None

    @property
    def engine_node(self) -> Any:
        """The libspelt node (``spelt._core``) this dataset runs as: built on first use from
        its parents' nodes, not pickled, not copied. The execution summary sets it to a
        profiled node on its copies of a pipeline."""
        if self._node_cache is None:
            self._node_cache = self._make_node()
        return self._node_cache

    @engine_node.setter
    def engine_node(self, node: Any) -> None:
        self._node_cache = node

    def _make_node(self):
        raise NotImplementedError

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_node_cache", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)


class _Transformations(Node):
    """The transformations MapDataset and IterDataset share. Each returns a new dataset of the
    same kind: an instance of the class the kind names for it (``_Map``, ``_Filter``, ...; set
    by ``spelt.dataset`` from ``spelt.transformations``)."""

    _Seed: type
    _Map: type
    _RandomMap: type
    _MapWithIndex: type
    _Filter: type
    _Batch: type
    _FlatMap: type

    def __init__(self, parents: Any = ()):
        """parents: one dataset or a sequence of them (what user subclasses pass, as in Grain)."""
        if isinstance(parents, _Transformations):
            parents = (parents,)
        self._parents = tuple(parents)

    @property
    def parents(self) -> Sequence[Any]:
        return getattr(self, "_parents", ())

    @property
    def _parent(self) -> Any:
        """The first parent (Grain's ``_parent``, which user subclasses read)."""
        return self._parents[0]

    def _parent_nodes(self) -> list[Any]:
        # The engine nodes of a user subclass's parents: later default seeds derive through
        # them, as Grain's derive through any dataset's parents.
        return [p.engine_node for p in self.parents if isinstance(p, _Transformations)]

    @property
    def _element_spec(self) -> Any:
        """The spec of the elements without reading any (``spelt.element_spec``); a dataset
        with no inference rule raises NotImplementedError, as Grain's base class does. User
        datasets may override it."""
        raise element_spec.not_inferred(self)

    def seed(self, seed: int) -> Any:
        """Sets the seed from which later random transformations derive default seeds (Grain's
        ``seed()``): any non-negative int. TypeError if not an int, ValueError if negative."""
        return self._Seed(self, _args.seed_words(seed))

    def map(self, transform: transforms.Map | Callable[[Any], Any]) -> Any:
        """Applies ``transform`` (a ``grain.transforms.Map`` or a callable) to each element.
        On a MapDataset it runs per index (in parallel under ``mp_prefetch``), elements that are
        None (filtered) are passed over. TypeError if ``transform`` is neither."""
        return self._Map(self, _callables.map_fn(transform))

    def random_map(
        self,
        transform: transforms.RandomMap | Callable[[Any, Any], Any],
        *,
        seed: int | None = None,
    ) -> Any:
        """fn(element, rng): rng is numpy Generator(Philox(seed)) at counter [0, 0, 0, k], where k
        is the global index on a MapDataset and the element count on an IterDataset (Grain's
        scheme, so draws equal Grain's). ``seed``: any non-negative int, as Grain accepts (TypeError
        if not an int, ValueError if negative); without it, the default seed derived from
        ``seed()`` upstream (ValueError if there is none)."""
        fn = _callables.random_map_fn(transform)
        return self._RandomMap(
            self, fn, _args.resolve_seed_words(seed, self.engine_node, "random_map")
        )

    def map_with_index(self, transform: transforms.MapWithIndex | Callable[[int, Any], Any]) -> Any:
        """fn(index, element): the global index on a MapDataset, the running element count on an
        IterDataset (Grain's MapWithIndex)."""
        return self._MapWithIndex(self, _callables.map_with_index_fn(transform))

    def filter(self, transform: transforms.Filter | Callable[[Any], bool]) -> Any:
        """Keeps the elements for which ``transform`` is true. On a MapDataset the others become
        None at their index (skipped by ``to_iter_dataset``), so ``len()`` does not change.
        Iterating warns (by default) or raises when a window of 1000 elements is mostly skipped:
        ``DatasetOptions.filter_warn_threshold_ratio`` / ``filter_raise_threshold_ratio``."""
        return self._Filter(self, _callables.filter_fn(transform))

    def batch(
        self,
        batch_size: int,
        *,
        drop_remainder: bool = False,
        batch_fn: Callable[[Sequence[Any]], Any] | None = None,
    ) -> Any:
        """Stacks ``batch_size`` consecutive elements leaf by leaf along a new axis 0 (numpy's
        np.stack rules, or ``batch_fn(list_of_elements)``); on a MapDataset batches never span
        epochs. ValueError if batch_size <= 0, or on a MapDataset after ``filter``."""
        batch_size = _args.clamped(_args.int_arg(batch_size, "batch: batch_size"))
        batch_fn = _args.callable_arg(batch_fn, "batch: batch_fn", optional=True)
        drop_remainder = _args.bool_arg(drop_remainder, "batch: drop_remainder")
        return self._Batch(self, batch_size, drop_remainder, batch_fn)

    def apply(self, transformations: Any) -> Any:
        """Applies one ``grain.transforms`` transformation or a sequence of them, in order
        (Batch, Map, RandomMap, MapWithIndex, Filter, FlatMap). NotImplementedError on anything
        else (a TfRandomMap included), as Grain's apply_transformations."""
        if not hasattr(transformations, "__iter__"):
            transformations = [transformations]
        ds = self
        for t in list(transformations):  # any iterable, read once
            if isinstance(t, transforms.Batch):
                ds = ds.batch(t.batch_size, drop_remainder=t.drop_remainder, batch_fn=t.batch_fn)
            elif isinstance(t, transforms.Map):
                ds = ds.map(t)
            elif isinstance(t, transforms.RandomMap):
                ds = ds.random_map(t)
            elif isinstance(t, transforms.MapWithIndex):
                ds = ds.map_with_index(t)
            elif isinstance(t, transforms.Filter):
                ds = ds.filter(t)
            elif isinstance(t, transforms.FlatMap):
                ds = self._FlatMap(ds, t)
            else:  # Grain's error and message (apply_transformations)
                raise NotImplementedError(f"Transformation type: {t} is not supported.")
        return ds

    def pipe(self, func: Callable[..., Any], /, *args, **kwargs) -> Any:
        """``func(self, *args, **kwargs)``, for chaining user functions (Grain's ``pipe``)."""
        return func(self, *args, **kwargs)


T = TypeVar("T")


class MapDataset(_Transformations, Generic[T], abc.ABC):
    """A random-access dataset (Grain's ``MapDataset``).

    Subclass it with ``__len__`` and ``__getitem__(index)`` (global index; return None for a
    dropped element) to make a custom dataset, or build one with :meth:`source` /
    :meth:`range` and the transformation methods. Datasets are immutable and thread-safe.
    """

    # The classes of the MapDataset-only operations (set by spelt.dataset).
    _Source: type
    _Range: type
    _Concatenate: type
    _Mix: type
    _Select: type
    _Shuffle: type
    _Slice: type
    _Reindex: type
    _Repeat: type
    _ToIter: type

    def _make_node(self):
        return _core.python_map_dataset(self, self._parent_nodes())

    # Factories.
    @classmethod
    def source(cls, source: Any) -> MapDataset:
        """Dataset over any random-access source (``__len__`` + ``__getitem__``)."""
        return cls._Source(source)

    @classmethod
    def range(cls, start: int, stop: int | None = None, step: int = 1) -> MapDataset:
        """Python's ``range`` as a dataset of ints. ValueError if step == 0."""
        if stop is None:
            start, stop = 0, start
        args = (start, "start"), (stop, "stop"), (step, "step")
        start, stop, step = (_args.int_arg(v, f"range: {name}", bool_ok=True) for v, name in args)
        if step == 0:
            raise ValueError("range() arg 3 must not be zero")
        return cls._Range(start, stop, step)

    @classmethod
    def concatenate(cls, datasets: Sequence[MapDataset]) -> MapDataset:
        """The datasets one after the other; epoch n of the result is epoch n of each.
        ValueError if one is infinite."""
        return cls._Concatenate(datasets)

    @classmethod
    def mix(
        cls, datasets: Sequence[MapDataset], weights: Sequence[float] | None = None
    ) -> MapDataset:
        """Deterministic mixture by weights (default uniform), Grain's selection; length is
        min over i of len(datasets[i]) / normalized weight i."""
        return cls._Mix(datasets, weights)

    @classmethod
    def select_from_datasets(
        cls, datasets: Sequence[MapDataset], selection_map: transforms.DatasetSelectionMap
    ) -> MapDataset:
        """Element i is ``datasets[d][k]`` for ``(d, k) = selection_map[i]``; the length is
        ``len(selection_map)`` (Grain's MixedMapDataset with a selection map)."""
        return cls._Select(datasets, selection_map)

    # Access.
    def __len__(self) -> int:
        return len(self.engine_node)

    def __getitem__(self, index):
        """Element at a global index (>= len reads later epochs; a negative one reads an
        earlier epoch, as Grain does: -1 is the last element of epoch -1, whose per-epoch
        seeds are seed - 1 modulo 2**32), None if filtered out; a slice gives a dataset.
        IndexError for an index that the engine's int64 indices cannot address."""
        if isinstance(index, slice):
            return self.slice(index)
        return self.engine_node.get(self._global_index(index))

    def _getitems(self, indices: Sequence[int]) -> list[Any]:
        """Elements at ``indices`` (Grain's batched read), read with one engine call so that the
        source sees them together (one ``__getitems__``, one ArrayRecord batch, one gather)."""
        return self.engine_node.get_many([self._global_index(i) for i in indices])

    def _global_index(self, index: int) -> int:
        return global_index(index, len(self))

    def __iter__(self) -> DatasetIterator:
        return self.to_iter_dataset().__iter__()

    # Transformations.
    def shuffle(self, seed: int | None = None) -> MapDataset:
        """Global shuffle, a new permutation each epoch (epoch e uses seed + e), by Grain's
        index_shuffle (O(1) memory). Without ``seed``, the default seed derived from ``seed()``
        upstream; ValueError if there is none."""
        return self._Shuffle(self, _args.resolve_seed(seed, self.engine_node, "shuffle"))

    def slice(self, sl: builtins.slice | Sequence[int]) -> MapDataset:
        """The elements at ``sl``: a Python ``slice`` of one epoch (``ds[a:b:c]``), or a
        sequence of indices (a list, tuple, range, 1-D integer numpy array or MapDataset of
        ints, as Grain's ``ReindexMapDataset``): ``ds.slice([3, 1, 4])[k] == ds[[3, 1, 4][k]]``,
        ``len()`` is the number of indices, negative ones count from the end, one at or
        beyond ``len(self)`` reads a later epoch (as ``self[i]``), repeats allowed.

        Both are fixed subsets: later epochs (``repeat``, ``ds[k]`` for ``k >= len``) read the
        same parent indices again (docs/compatibility.md, grain#1200). The element spec is
        this dataset's. ValueError if ``sl`` is neither; TypeError if it holds a non-int
        (naming its position); IndexError for an index below ``-len(self)``.
        """
        if not isinstance(sl, builtins.slice):
            return self._Reindex(self, sl)
        bounds = (sl.start, "start"), (sl.stop, "stop"), (sl.step, "step")
        return self._Slice(
            self,
            *(
                _args.clamped(_args.int_arg(v, f"slice: {name}", optional=True, bool_ok=True))
                for v, name in bounds
            ),
        )

    def repeat(
        self, num_epochs: int | None = None, *, reseed_each_epoch: bool = True
    ) -> MapDataset:
        """Repeats num_epochs times (None: forever, len() is sys.maxsize as in Grain).
        reseed_each_epoch=False replays epoch 0 exactly. A length beyond sys.maxsize saturates
        at sys.maxsize (where Grain's len() raises OverflowError; docs/compatibility.md)."""
        num_epochs = _args.clamped(_args.int_arg(num_epochs, "repeat: num_epochs", optional=True))
        return self._Repeat(self, num_epochs, reseed_each_epoch)

    def to_iter_dataset(
        self,
        read_options: options_lib.ReadOptions | None = None,
        *,
        allow_nones: bool = False,
    ) -> IterDataset:
        """Ordered read-ahead over this dataset, skipping Nones unless allow_nones."""
        _args.options_arg(read_options, options_lib.ReadOptions, "to_iter_dataset: read_options")
        allow_nones = _args.bool_arg(allow_nones, "to_iter_dataset: allow_nones")
        return self._ToIter(self, read_options or options_lib.ReadOptions(), allow_nones)


def global_index(index: int, length: int) -> int:
    """The engine's int64 index of element ``index`` (any Python int, as Grain takes) of a
    MapDataset of ``length`` elements. An index that is negative or past 2**63 - 1 becomes the
    index of the same element position, epoch taken modulo 2**32 (per-epoch seeds are seed +
    epoch mod 2**32): Grain reads a negative index as a global index too, epoch ``index //
    length`` (negative) at position ``index % length``. IndexError if even that does not fit
    in 64 bits (an infinite dataset, say) or the dataset is empty; TypeError if ``index`` is
    not an int."""
    index = _args.int_arg(index, "index", bool_ok=True)
    if 0 <= index < _args.MAX_INDEX:
        return index
    if 0 < length < _args.MAX_INDEX:
        epoch, position = divmod(index, length)
        reduced = (epoch % 2**32) * length + position
        if reduced < _args.MAX_INDEX:
            return reduced
    if index < 0 and length == 0:
        raise IndexError(f"index {index} out of range for a dataset of length 0")
    raise IndexError(f"index {index} is beyond what a dataset of length {length} can address")


class IterDataset(_Transformations, Generic[T], abc.ABC):
    """A stream dataset (Grain's ``IterDataset``); ``iter()`` gives a DatasetIterator.

    Subclass it with ``__iter__`` returning a :class:`DatasetIterator` (``__next__``,
    ``get_state``, ``set_state``) to make a custom stream.
    """

    _Mix: type  # IterDataset.mix (set by spelt.dataset, as the other operations' classes)
    # mp_prefetch(ds, options, worker_init_fn, autotune, ram_budget_mb), and the iterator that
    # tracks stages (None when tracking is off; spelt/_summary.py): set by spelt.dataset.
    _mp_prefetch: Callable[..., IterDataset]
    _tracked_iterator: Callable[[IterDataset], DatasetIterator | None]

    def _make_node(self):
        return _core.python_iter_dataset(self, self._parent_nodes())

    def _stream_nodes(self) -> list[Any]:
        """The engine nodes of the parents as streams: a MapDataset parent is read as its
        ``to_iter_dataset()`` reads it, as Grain's IterDataset operations iterate it
        (``iter(parent)``), but with no extra level of the default-seed derivation
        (``as_stream``: in Grain the MapDataset itself is the parent)."""
        return [
            p.engine_node.as_stream() if isinstance(p, MapDataset) else p.engine_node
            for p in self._parents
        ]

    def __iter__(self) -> DatasetIterator:
        tracked = self._tracked_iterator(self)  # debug mode or STAGE_TIMING: count per stage
        return EngineDatasetIterator(engine_iterator(self), self) if tracked is None else tracked

    @classmethod
    def mix(
        cls,
        datasets: Sequence[IterDataset] | Mapping[str, IterDataset],
        weights: Sequence[float] | Mapping[str, float] | None = None,
    ) -> IterDataset:
        """Mixes streams by weights (default uniform), picking as ``MapDataset.mix`` does, and
        stops once a picked stream is exhausted (Grain's MixedIterDataset). With a mapping of
        datasets (and of weights), the state is keyed, so a checkpoint restores by key."""
        return cls._Mix(datasets, weights)

    def mp_prefetch(
        self,
        options: options_lib.MultiprocessingOptions | None = None,
        worker_init_fn: Callable[[int, int], None] | None = None,
        sequential_slice: bool = False,
        *,
        autotune: bool = False,
        ram_budget_mb: int | None = None,
    ) -> IterDataset:
        """This pipeline with the MapDataset part (below ``to_iter_dataset``) computed by
        ``options.num_workers`` worker processes (default ``MultiprocessingOptions(num_workers=10)``
        as in Grain; threads when that part calls no Python). ``worker_init_fn(worker_index,
        worker_count)`` runs first in each worker.

        Unlike Grain, the output (batch boundaries included) and the iterator state never depend on
        the number of workers, and a state restores with any number of them; hence
        ``sequential_slice`` has no effect. A pipeline with no ``to_iter_dataset`` stage (a custom
        IterDataset source) is returned unchanged and runs in this process. See docs/workers.md.

        ``options`` may instead be a ``spelt.experimental.RayOptions``: the MapDataset part is
        then computed by Ray actors, with the same output and state (docs/distributed.md).

        ``autotune=True`` (beyond Grain) starts one worker, then at its first chunk as many as
        the CPUs and the budget allow, then adds, parks or un-parks workers and changes the
        per-worker buffer while the iterator runs, from the consumer's
        waits and the workers' utilisation, within ``ram_budget_mb`` (MiB for the workers and
        their buffered chunks; default half of the available memory; docs/workers.md,
        "Autotuning"). ``options.num_workers`` is then the most workers
        (default or 0: the CPU count), ``options.per_worker_buffer_size`` the first buffer size
        (at most 8, or that size if larger). Output and state are unchanged.
        """
        del sequential_slice  # chunks are always consecutive indices
        return self._mp_prefetch(self, options, worker_init_fn, autotune, ram_budget_mb)

    def prefetch(self, multiprocessing_options: options_lib.MultiprocessingOptions) -> IterDataset:
        """Deprecated alias of mp_prefetch (as in Grain)."""
        return self.mp_prefetch(multiprocessing_options)


class DatasetIterator(Iterator[T], abc.ABC):
    """Stateful iterator (Grain's ``DatasetIterator``).

    Iterators of Spelt's own pipelines may be shared by threads: ``next``, ``get_state``,
    ``set_state`` and ``close`` are serialised (each element goes to exactly one caller), as
    Grain's to_iter_dataset iterator does with its lock. A subclass written by the user is as
    thread-safe as its own code.

    Subclasses implement ``__next__``, ``get_state() -> dict`` and ``set_state(dict)``.
    """

    def __init__(self, parents: Any = ()):
        if isinstance(parents, DatasetIterator):
            parents = (parents,)
        self._parents = tuple(parents)

    @property
    def _parent(self) -> DatasetIterator:
        return self._parents[0]

    def __iter__(self) -> DatasetIterator:
        return self

    @abc.abstractmethod
    def __next__(self) -> Any: ...

    @abc.abstractmethod
    def get_state(self) -> dict[str, Any]:
        """The state after the last element returned: a small JSON-serialisable dict in Grain's
        layout for the same pipeline (e.g. ``{"next_index": n}`` for to_iter_dataset), never
        O(records)."""

    @abc.abstractmethod
    def set_state(self, state: dict[str, Any]) -> None:
        """Resumes right after the element at which ``state`` was taken by ``get_state()`` of an
        iterator of the same pipeline (in any process, with any number of threads or workers).
        ValueError if the state is malformed or out of range, naming the field."""

    def _get_next_index(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} cannot tell its next index")

    def _set_next_index(self, index: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot move to an index")

    async def save(self, directory: Any) -> Awaitable[None]:
        """Orbax v1's checkpointable ``save`` (a coroutine, as Grain's): awaited, it takes the
        state (``get_state()``; Orbax awaits it at once, so later ``next()`` calls do not change
        what is saved) and returns the not yet awaited coroutine writing it.

        Args:
            directory: the checkpoint item's directory; Orbax's ``PathAwaitingCreation``
                (awaited before writing), a path object or a str.

        Returns:
            The coroutine writing the state to ``directory/process_<i>-of-<n>.json`` (JSON,
            indent 4; Grain's layout), which Orbax runs in the background.
        """
        return _checkpoint_io.background_save(directory, json.dumps(self.get_state(), indent=4))

    async def load(self, directory: Any) -> Awaitable[None]:
        """Orbax v1's checkpointable ``load`` (a coroutine, as Grain's): awaited, it returns the
        coroutine that reads ``directory/process_<i>-of-<n>.json`` and calls ``set_state`` with
        it; ValueError if the file is missing, unless the checkpoint was written by another
        number of processes and the iterator can merge their files
        (``_checkpoint_io.read_state``). Do not use the iterator until that coroutine is
        done."""
        return _checkpoint_io.background_load(
            directory, lambda text: self.set_state(json.loads(text)), self
        )

    def start_prefetch(self) -> None:
        """Starts read-ahead before the first ``next``; idempotent."""

    def close(self) -> None:
        """Releases resources; idempotent."""


class Unpicklable:
    """Mixin for iterators that hold live resources (threads, processes)."""

    def __getstate__(self):
        raise TypeError(
            "a DatasetIterator cannot be pickled; save get_state() and restore it with"
            " set_state() on a new iterator"
        )


class EngineDatasetIterator(Unpicklable, DatasetIterator):
    """Iterator of an engine pipeline. State is a JSON-compatible dict in Grain's layout; the
    engine's iterator answers Grain's get_next_index / set_next_index itself (each operation
    of the pipeline reads its next index from its state: spelt/node.h)."""

    def __init__(
        self, it: Any, ds: IterDataset | None = None, tracker: Any = None, *, pipeline: Any = None
    ):
        """it: the engine's iterator; ds: the dataset it iterates (None: an iterator over
        another iterator), not kept: it would keep its worker pools alive. tracker: the
        execution summary's Tracker of its stages, if tracked (spelt/_summary.py). pipeline:
        the dataset whose data sources ``close()`` closes, if not ds
        (:func:`closable_sources`)."""
        super().__init__()
        if tracker is not None:
            self._spelt_tracker = tracker
        self._it = it
        self._closed = False
        self._closed_state: dict[str, Any] | None = None
        pipeline = ds if pipeline is None else pipeline
        self._sources = closable_sources(pipeline) if pipeline is not None else []

    def __next__(self) -> Any:
        if self._closed:
            raise ValueError("next() on a closed iterator")
        return self._it.next()

    def get_state(self) -> dict[str, Any]:
        if self._closed:  # the state where it was closed, as Grain's iterators keep it
            return copy.deepcopy(self._closed_state)
        return self._it.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict):
            raise ValueError(f"state must be a dict, got {type(state).__name__}")
        self._it.set_state(state)

    def _get_next_index(self) -> int:
        return self._it.get_next_index()

    def _set_next_index(self, index: int) -> None:
        index = _args.int_arg(index, "set_next_index: index", bool_ok=True)
        self._it.set_next_index(_args.clamped(index))

    def start_prefetch(self) -> None:
        if self._closed:
            raise ValueError("start_prefetch() on a closed iterator")
        self._it.start_prefetch()

    def close(self) -> None:
        """Stops the pipeline, then calls ``close()`` once on each plain data source it reads
        (:func:`closable_sources`; Grain never does: docs/compatibility.md). Idempotent."""
        if not self._closed:
            self._closed_state = self._it.get_state()
            self._closed = True
            self._it.close()
        close_sources(self.__dict__.pop("_sources", ()))  # pop: once, even from two threads


class ParentSpec:
    """An op whose elements have the spec of its first parent's (Grain's shuffle, slice,
    repeat, filter, prefetch, mix, ...)."""

    @property
    def _element_spec(self) -> Any:
        return element_spec.get_element_spec(self._parents[0])


class TransformStr:
    """A map, random_map, map_with_index or filter: str() is Grain's, naming the op's class
    (Grain's; the engine node may be another, e.g. a native image map's MapWithIndex) and the
    transform."""

    def __str__(self) -> str:
        transform = _callables.transform_of(self.args[0])
        return f"{type(self).__name__}(transform={transforms.get_pretty_transform_name(transform)})"


class TransformSpec(TransformStr):
    """A map, random_map or map_with_index: the spec is its transform's ``output_spec`` of the
    parent's spec (Grain's _ElementSpecFromTransform mixins)."""

    @property
    def _element_spec(self) -> Any:
        transform = _callables.transform_of(self.args[0])
        return element_spec.transformed_spec(
            transform, transforms.get_pretty_transform_name(transform), self._parents[0]
        )


class BatchSpec:
    """A batch: the parent's spec with a leading batch dimension (``batched_spec``); and
    Grain's SupportsSharedMemoryOutput protocol."""

    def enable_shared_memory_output(self) -> None:
        """Accepted for Grain code (its DataLoader calls it before ``mp_prefetch``); changes
        nothing: batches computed by Spelt's workers always reach the consumer through shared
        memory (the workers' arenas, docs/workers.md), without Grain's extra copy."""

    @property
    def _element_spec(self) -> Any:
        batch_size, drop_remainder, batch_fn = self.args[:3]
        return element_spec.batched_spec(
            element_spec.get_element_spec(self._parents[0]), batch_size, drop_remainder, batch_fn
        )


class _Op:
    """A transformation of one parent: the engine node is ``_build(parent_node, *args)``, a
    typed method of ``_core.MapDataset`` or ``_core.IterDataset``, built at once so that
    argument errors surface where the transformation is called."""

    _build: Callable[..., Any]

    def __init__(self, parent: Any, *args: Any):
        super().__init__(parent)
        self.args = args
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._build(self._parents[0].engine_node, *self.args)

    def __str__(self) -> str:
        return self.engine_node.name()


class OpMapDataset(_Op, MapDataset):
    """A transformation of one parent MapDataset (``_core.MapDataset`` methods)."""


class OpIterDataset(_Op, IterDataset):
    """A transformation of one parent IterDataset (``_core.IterDataset`` methods)."""


class WithOptionsIterDataset(ParentSpec, IterDataset):
    """``parent`` with ``options`` for the whole pipeline (merged with options set further
    down; the latest set value wins). Output and state are the parent's (Grain's
    WithOptionsIterDataset)."""

    _no_stage = True  # Grain's iterates its parent: no stage in execution summaries

    def __init__(self, parent: IterDataset, options: dataset_options.DatasetOptions):
        super().__init__(parent)
        self.options = options

    def _make_node(self):
        return self._stream_nodes()[0].with_options()

    @property
    def merged_options(self) -> dataset_options.DatasetOptions:
        """These options merged with those of the WithOptionsIterDatasets below."""
        return pipeline_options(self)

    def __str__(self) -> str:
        return f"WithOptionsIterDataset(options={self.options})"


def engine_iterator(ds: IterDataset) -> _core.DatasetIterator:
    """The engine's iterator of the pipeline ``ds``, whose filters check the filter thresholds
    of its ``DatasetOptions`` (``WithOptionsIterDataset``; Grain's defaults otherwise)."""
    options = pipeline_options(ds)
    return ds.engine_node.make_iterator(
        options.filter_warn_threshold_ratio,
        options.filter_raise_threshold_ratio,
        dataset_options.warn,
    )


def pipeline_options(ds: Any) -> dataset_options.DatasetOptions:
    """The options of the pipeline that ends at ``ds``: those of every WithOptionsIterDataset
    in it, merged so that the outermost (the latest set) win; the defaults if there is none."""
    result = dataset_options.DatasetOptions()
    to_visit: list[Any] = [ds]
    while to_visit:
        node = to_visit.pop(0)
        if isinstance(node, WithOptionsIterDataset):
            result = result.merge(node.options)
        to_visit.extend(getattr(node, "parents", ()))
    return result


# Sources whose close() an iterator must not call: it empties a shared segment that the next
# iterator (the next epoch) reads (Spelt's and Grain's SharedMemoryDataSource / InMemoryDataSource).
_KEPT_OPEN = {("spelt", "SharedMemoryDataSource"), ("grain", "SharedMemoryDataSource")}


def _closable(source: Any) -> bool:
    kind = type(source)
    if (kind.__module__.split(".")[0], kind.__name__) in _KEPT_OPEN:
        return False
    if hasattr(source, "__enter__") and hasattr(source, "__exit__"):
        return False  # a context manager: a DataLoader enters and exits it (data_loader.py)
    return callable(getattr(source, "close", None))


def closable_sources(ds: Any) -> list[Any]:
    """The distinct data sources (by identity) of the pipeline ``ds`` that its iterators'
    ``close()`` closes: those of ``MapDataset.source`` and a DataLoader's ``data_source``
    (``_spelt_data_source``; the sources of one that is a dataset) anywhere among its parents
    (and the datasets of an interleave given as a sequence, ``_spelt_inner_datasets``) that
    have a ``close()`` and are not context managers, except a SharedMemoryDataSource
    (``_KEPT_OPEN``)."""
    found: dict[int, Any] = {}
    seen: set[int] = set()
    to_visit: list[Any] = [ds]
    while to_visit:
        node = to_visit.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        source = getattr(node, "_spelt_data_source", None)
        if isinstance(source, _Transformations):  # a MapDataset as a DataLoader's data_source
            to_visit.append(source)
        elif source is not None and id(source) not in found and _closable(source):
            found[id(source)] = source
        to_visit.extend(getattr(node, "parents", ()))
        to_visit.extend(getattr(node, "_spelt_inner_datasets", ()))
    return list(found.values())


def close_keeping_sources(it: DatasetIterator) -> None:
    """``it.close()`` without closing its data sources: for an iterator that a Spelt iterator
    replaces by another over the same sources (ElasticIterator.set_state)."""
    it.__dict__.pop("_sources", None)
    it.close()


def close_sources(sources: Sequence[Any]) -> None:
    """Calls each source's ``close()``; the first error is raised after all were called."""
    error: BaseException | None = None
    for source in sources:
        try:
            source.close()
        except Exception as e:  # pylint: disable=broad-exception-caught
            error = error or e
    if error is not None:
        raise error


def with_parents(ds: Any, parents: Sequence[Any]) -> Any:
    """A shallow copy of the dataset ``ds`` over ``parents`` instead of its own: its engine node
    is rebuilt from them on first use (``Node`` drops the cached one when copied). The one place
    that gives a built dataset other parents."""
    twin = copy.copy(ds)
    twin._parents = tuple(parents)  # pylint: disable=protected-access
    return twin


def rewrite(ds: Any, visit: Callable[[Any, Callable[[Any], Any]], Any]) -> Any:
    """The dataset tree ``ds`` rewritten by ``visit(node, descend)``, which returns what replaces
    ``node``: ``descend(node)`` is ``node`` over its rewritten parents (``node`` itself if none
    changed, else :func:`with_parents`), so a visitor that replaces nothing returns it, and one
    that stops the walk returns ``node``. ``ds`` itself is never changed."""

    def descend(node: Any) -> Any:
        old = tuple(getattr(node, "parents", ()))
        new = tuple(rewrite(p, visit) for p in old)
        return node if all(a is b for a, b in zip(new, old)) else with_parents(node, new)

    return visit(ds, descend)
