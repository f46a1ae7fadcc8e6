"""Grain's Dataset API: MapDataset, IterDataset and DatasetIterator, run by libspelt.

A dataset here is a thin, picklable Python description; the pipeline itself is a chain of
engine nodes (``spelt._core``) built from it on first use. Per-element work (indexing,
shuffling, read-ahead, batching, bookkeeping) runs in C++ with the GIL released; only user
callables and Python data sources are called back under the GIL.

Semantics follow Grain 0.2.x (grain/_src/python/dataset/dataset.py): a MapDataset is random
access by global index (index >= len reads later epochs), ``filter`` yields None for dropped
elements, ``seed()`` provides default seeds, iterator state is a small JSON-compatible dict
in Grain's layout (e.g. ``{"next_index": n}`` for ``to_iter_dataset``).
"""

from __future__ import annotations

import abc
import builtins
import copy
import functools
import json
import operator
import warnings
from typing import Any, Awaitable, Callable, Generic, Iterator, Mapping, Sequence, TypeVar

import numpy as np

from spelt import _callables
from spelt import _checkpoint_io
from spelt import _core
from spelt import _summary
from spelt import element_spec
from spelt import options as options_lib
from spelt import transforms
from spelt._workers import autotune as autotune_lib
from spelt._workers import keeper as keeper_lib


_MAX_INDEX = 2**63 - 1  # sys.maxsize: the engine's indices are int64


def _clamped(value: Any) -> Any:
    """An int beyond the engine's int64 range as the nearest int64 (Python's slices and counts
    saturate alike: a length never exceeds 2**63 - 1); anything else unchanged."""
    if isinstance(value, int) and not isinstance(value, bool):
        return max(-_MAX_INDEX, min(_MAX_INDEX, value))
    return value


def _int_arg(value: Any, what: str) -> int:
    """``value`` as a Python int: any integer type (Python or NumPy, as Grain accepts), but not
    bool. TypeError naming ``what`` otherwise."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    return operator.index(value)


def _check_seed(seed: Any, what: str) -> int:
    seed = _int_arg(seed, f"{what}: seed")
    if seed < 0 or seed >= 2**32:
        raise ValueError(f"{what}: seed must be in [0, 2**32), got {seed}")
    return seed


def _seed_words(seed: Any, what: str = "seed") -> list[int]:
    """The 32-bit words of a ``ds.seed()`` or ``random_map`` seed, least significant first: any
    non-negative int, as Grain (numpy's SeedSequence) accepts. TypeError if not an int,
    ValueError if negative."""
    seed = _int_arg(seed, f"{what}: seed")
    if seed < 0:
        raise ValueError(f"{what}: seed must be non-negative, got {seed}")
    words = [seed & 0xFFFFFFFF]
    while seed := seed >> 32:
        words.append(seed & 0xFFFFFFFF)
    return words


def _default_seed(parent_node: Any, what: str) -> int:
    derived = parent_node.default_seed()
    if derived is None:
        raise ValueError(
            f"{what} requires a seed: pass seed=... or call ds.seed(...) earlier in the pipeline"
        )
    return derived


def _resolve_seed(seed: int | None, parent_node: Any, what: str) -> int:
    """A 32-bit seed (shuffle): ``seed`` if given, else the default seed from ``ds.seed()``."""
    return _default_seed(parent_node, what) if seed is None else _check_seed(seed, what)


def _resolve_seed_words(seed: int | None, parent_node: Any, what: str) -> list[int]:
    """A seed of any size (random_map), as its 32-bit words: ``seed`` if given, else the
    default seed from ``ds.seed()``."""
    return [_default_seed(parent_node, what)] if seed is None else _seed_words(seed, what)


class _Node:
    """Mixin: a lazily built engine node, dropped when pickled and rebuilt after."""

    _node_cache: Any = None

    @property
    def _node(self):
        if self._node_cache is None:
            self._node_cache = self._make_node()
        return self._node_cache

    def _make_node(self):
        raise NotImplementedError

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_node_cache", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)


class _Transformations(_Node):
    """The transformations MapDataset and IterDataset share. Each returns a new dataset of the
    same kind: an instance of the class the kind names for it (``_Map``, ``_Filter``, ...)."""

    _Seed: type
    _Map: type
    _RandomMap: type
    _MapWithIndex: type
    _Filter: type
    _Batch: type

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
        return [p._node for p in self.parents if isinstance(p, _Transformations)]

    @property
    def _element_spec(self) -> Any:
        """The spec of the elements without reading any (``spelt.element_spec``); a dataset
        with no inference rule raises NotImplementedError, as Grain's base class does. User
        datasets may override it."""
        raise element_spec.not_inferred(self)

    def seed(self, seed: int) -> Any:
        """Sets the seed from which later random transformations derive default seeds (Grain's
        ``seed()``): any non-negative int. TypeError if not an int, ValueError if negative."""
        return self._Seed(self, _seed_words(seed))

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
        return self._RandomMap(self, fn, _resolve_seed_words(seed, self._node, "random_map"))

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
        return self._Batch(self, _clamped(batch_size), drop_remainder, batch_fn)

    def apply(self, transformations: Any) -> Any:
        """Applies one ``grain.transforms`` transformation or a sequence of them, in order
        (Batch, Map, RandomMap, MapWithIndex, Filter, FlatMap). NotImplementedError on anything
        else (a TfRandomMap included), as Grain's apply_transformations."""
        return _apply(self, transformations)

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

    def _make_node(self):
        return _core.python_map_dataset(self, self._parent_nodes())

    # Factories.
    @classmethod
    def source(cls, source: Any) -> MapDataset:
        """Dataset over any random-access source (``__len__`` + ``__getitem__``)."""
        return _SourceMapDataset(source)

    @classmethod
    def range(cls, start: int, stop: int | None = None, step: int = 1) -> MapDataset:
        """Python's ``range`` as a dataset of ints. ValueError if step == 0."""
        if stop is None:
            start, stop = 0, start
        start, stop, step = (operator.index(v) for v in (start, stop, step))  # TypeError as range()
        if step == 0:
            raise ValueError("range() arg 3 must not be zero")
        return _RangeMapDataset(start, stop, step)

    @classmethod
    def concatenate(cls, datasets: Sequence[MapDataset]) -> MapDataset:
        """The datasets one after the other; epoch n of the result is epoch n of each.
        ValueError if one is infinite."""
        return _ConcatenateMapDataset(datasets)

    @classmethod
    def mix(
        cls, datasets: Sequence[MapDataset], weights: Sequence[float] | None = None
    ) -> MapDataset:
        """Deterministic mixture by weights (default uniform), Grain's selection; length is
        min over i of len(datasets[i]) / normalized weight i."""
        return _MixMapDataset(datasets, weights)

    @classmethod
    def select_from_datasets(
        cls, datasets: Sequence[MapDataset], selection_map: transforms.DatasetSelectionMap
    ) -> MapDataset:
        """Element i is ``datasets[d][k]`` for ``(d, k) = selection_map[i]``; the length is
        ``len(selection_map)`` (Grain's MixedMapDataset with a selection map)."""
        return _SelectMapDataset(datasets, selection_map)

    # Access.
    def __len__(self) -> int:
        return len(self._node)

    def __getitem__(self, index):
        """Element at a global index (>= len reads later epochs; negative counts from the end
        of the first epoch, as Grain does), None if filtered out; a slice gives a dataset.
        IndexError for a negative index below -len."""
        if isinstance(index, slice):
            return self.slice(index)
        return self._node.get(self._global_index(index))

    def _getitems(self, indices: Sequence[int]) -> list[Any]:
        """Elements at ``indices`` (Grain's batched read), read with one engine call so that the
        source sees them together (one ``__getitems__``, one ArrayRecord batch, one gather)."""
        return self._node.get_many([self._global_index(i) for i in indices])

    def _global_index(self, index: int) -> int:
        index = operator.index(index)
        if index >= _MAX_INDEX:
            return self._reduced_index(index)
        if index < 0:  # counts from the end of the first epoch, as Grain does
            index += len(self)
            if index < 0:
                raise IndexError(
                    f"index {index - len(self)} out of range for a dataset of length {len(self)}"
                )
        return index

    def _reduced_index(self, index: int) -> int:
        """An index past 2**63 - 1 (any Python int works, as in Grain) as the engine's int64
        index of the same element: same position, epoch taken modulo 2**32 (per-epoch seeds
        are seed + epoch mod 2**32). IndexError if even that does not fit in 64 bits."""
        length = len(self)
        if 0 < length < _MAX_INDEX:
            epoch, position = divmod(index, length)
            reduced = (epoch % 2**32) * length + position
            if reduced < _MAX_INDEX:
                return reduced
        raise IndexError(f"index {index} is beyond what a dataset of length {length} can address")

    def __iter__(self) -> DatasetIterator:
        return self.to_iter_dataset().__iter__()

    def _index_plan(self) -> _IndexPlan:
        """As the parent of an IterDataset operation, read in order as ``to_iter_dataset()``
        reads it (``IterDataset._stream_nodes``)."""
        return _IndexPlan()

    # Transformations.
    def shuffle(self, seed: int | None = None) -> MapDataset:
        """Global shuffle, a new permutation each epoch (epoch e uses seed + e), by Grain's
        index_shuffle (O(1) memory). Without ``seed``, the default seed derived from ``seed()``
        upstream; ValueError if there is none."""
        return _ShuffleMapDataset(self, _resolve_seed(seed, self._node, "shuffle"))

    def slice(self, sl: builtins.slice) -> MapDataset:
        """Python slice of one epoch (later epochs read the same positions of later epochs)."""
        if not isinstance(sl, builtins.slice):
            raise ValueError(f"sl is not a slice: {type(sl)}")
        return _SliceMapDataset(self, _clamped(sl.start), _clamped(sl.stop), _clamped(sl.step))

    def repeat(
        self, num_epochs: int | None = None, *, reseed_each_epoch: bool = True
    ) -> MapDataset:
        """Repeats num_epochs times (None: forever, len() is sys.maxsize as in Grain).
        reseed_each_epoch=False replays epoch 0 exactly. A length beyond sys.maxsize saturates
        at sys.maxsize (where Grain's len() raises OverflowError; docs/compatibility.md)."""
        return _RepeatMapDataset(self, _clamped(num_epochs), reseed_each_epoch)

    def to_iter_dataset(
        self,
        read_options: options_lib.ReadOptions | None = None,
        *,
        allow_nones: bool = False,
    ) -> IterDataset:
        """Ordered read-ahead over this dataset, skipping Nones unless allow_nones."""
        return _PrefetchIterDataset(self, read_options or options_lib.ReadOptions(), allow_nones)


class IterDataset(_Transformations, Generic[T], abc.ABC):
    """A stream dataset (Grain's ``IterDataset``); ``iter()`` gives a DatasetIterator.

    Subclass it with ``__iter__`` returning a :class:`DatasetIterator` (``__next__``,
    ``get_state``, ``set_state``) to make a custom stream.
    """

    def _make_node(self):
        return _core.python_iter_dataset(self, self._parent_nodes())

    def _stream_nodes(self) -> list[Any]:
        """The engine nodes of the parents as streams: a MapDataset parent is read as its
        ``to_iter_dataset()`` reads it, as Grain's IterDataset operations iterate it
        (``iter(parent)``), but with no extra level of the default-seed derivation
        (``as_stream``: in Grain the MapDataset itself is the parent)."""
        return [
            p._node.as_stream() if isinstance(p, MapDataset) else p._node for p in self._parents
        ]

    def __iter__(self) -> DatasetIterator:
        if _summary.tracking_enabled(self):  # debug mode or STAGE_TIMING: count per stage
            return _summary.profiled_iterator(self)
        return _NativeDatasetIterator(self._engine_iterator(), self)

    def _index_plan(self) -> _IndexPlan | None:
        """How the state of this dataset's iterators encodes the index of their next element
        (Grain's get_next_index / set_next_index); None where Grain's iterator cannot tell."""
        return None

    def _engine_iterator(self) -> _core.DatasetIterator:
        """The engine's iterator of this pipeline, whose filters check the filter thresholds of
        its ``DatasetOptions`` (``WithOptionsIterDataset``; Grain's defaults otherwise)."""
        from spelt import dataset_options  # pylint: disable=import-outside-toplevel

        options = dataset_options.pipeline_options(self)
        return self._node.make_iterator(
            options.filter_warn_threshold_ratio,
            options.filter_raise_threshold_ratio,
            dataset_options.warn,
        )

    @classmethod
    def mix(
        cls,
        datasets: Sequence[IterDataset] | Mapping[str, IterDataset],
        weights: Sequence[float] | Mapping[str, float] | None = None,
    ) -> IterDataset:
        """Mixes streams by weights (default uniform), picking as ``MapDataset.mix`` does, and
        stops once a picked stream is exhausted (Grain's MixedIterDataset). With a mapping of
        datasets (and of weights), the state is keyed, so a checkpoint restores by key."""
        from spelt import _combine  # pylint: disable=import-outside-toplevel

        return _combine.MixedIterDataset(datasets, weights)

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
        from spelt import ray as ray_lib  # pylint: disable=import-outside-toplevel

        if isinstance(options, ray_lib.RayOptions):
            if autotune:
                raise ValueError("mp_prefetch: autotune=True needs worker processes, not Ray")
            return ray_lib.prefetch(self, options)
        limits = None
        if autotune:
            options, limits = autotune_lib.configure(options, ram_budget_mb)
        if options is None:
            options = options_lib.MultiprocessingOptions(num_workers=10)
        if options.num_workers < 0:
            raise ValueError(f"num_workers must be non-negative, got {options.num_workers}")
        if options.num_workers == 0:
            return self
        if options.per_worker_buffer_size <= 0:
            raise ValueError(
                f"`buffer_size` must be greater than 0, got {options.per_worker_buffer_size}."
            )
        return _replace_stages(
            self,
            functools.partial(
                _parallel_stage, options=options, worker_init_fn=worker_init_fn, autotune=limits
            ),
        )

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

    def save(self, directory: Any) -> Awaitable[Awaitable[None]]:
        """Orbax's checkpointable ``save`` (Grain's): the state is taken now, as ``get_state()``,
        so later ``next()`` calls do not change what is saved.

        Args:
            directory: the checkpoint item's directory; Orbax's ``PathAwaitingCreation``
                (awaited before writing), a path object or a str.

        Returns:
            A coroutine that, awaited, returns the not yet awaited coroutine writing the
            state to ``directory/process_<i>-of-<n>.json`` (JSON, indent 4; Grain's layout),
            which Orbax runs in the background.
        """
        return _checkpoint_io.start_save(json.dumps(self.get_state(), indent=4), directory)

    def load(self, directory: Any) -> Awaitable[Awaitable[None]]:
        """Orbax's checkpointable ``load`` (Grain's): a coroutine that, awaited, returns the
        coroutine that reads ``directory/process_<i>-of-<n>.json`` and calls ``set_state`` with
        it; ValueError if the file is missing. Do not use the iterator until that coroutine is
        done."""
        return _checkpoint_io.start_load(directory, lambda text: self.set_state(json.loads(text)))

    def start_prefetch(self) -> None:
        """Starts read-ahead before the first ``next``; idempotent."""

    def close(self) -> None:
        """Releases resources; idempotent."""


class _Unpicklable:
    """Mixin for iterators that hold live resources (threads, processes)."""

    def __getstate__(self):
        raise TypeError(
            "a DatasetIterator cannot be pickled; save get_state() and restore it with"
            " set_state() on a new iterator"
        )


class _NativeDatasetIterator(_Unpicklable, DatasetIterator):
    """Iterator of an engine pipeline. State is a JSON-compatible dict in Grain's layout."""

    def __init__(self, it: Any, ds: IterDataset | None = None):
        """it: the engine's iterator; ds: the dataset it iterates (None: an iterator over
        another iterator, whose next index it cannot tell). Only ds's index plan is kept: the
        dataset itself would keep its worker pools alive."""
        super().__init__()
        self._it = it
        self._index_plan = None if ds is None else ds._index_plan()
        self._closed = False
        self._closed_state: dict[str, Any] | None = None

    def __next__(self) -> Any:
        if self._closed:
            raise ValueError("next() on a closed iterator")
        return self._it.next()

    def get_state(self) -> dict[str, Any]:
        if self._closed:  # the state where it was closed, as Grain's iterators keep it
            return copy.deepcopy(self._closed_state)
        return _slices_as_tuples(self._it.get_state())

    def set_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict):
            raise ValueError(f"state must be a dict, got {type(state).__name__}")
        self._it.set_state(state)

    def _get_next_index(self) -> int:
        if self._index_plan is None:
            return super()._get_next_index()
        return self._index_plan.next_index(self.get_state())

    def _set_next_index(self, index: int) -> None:
        if self._index_plan is None:
            return super()._set_next_index(index)
        self.set_state(self._index_plan.state_at(index, self.get_state()))

    def start_prefetch(self) -> None:
        if self._closed:
            raise ValueError("start_prefetch() on a closed iterator")
        self._it.start_prefetch()

    def close(self) -> None:
        if not self._closed:
            self._closed_state = _slices_as_tuples(self._it.get_state())
            self._closed = True
            self._it.close()


def _slices_as_tuples(state: Any) -> Any:
    """``state`` with ConcatThenSplitIterDataset's ``remainder_slices`` as (start, stop) tuples,
    as Grain returns them (Grain's restore compares them with the tuple (-1, -1))."""
    if isinstance(state, dict):
        return {
            k: (
                {f: tuple(s) for f, s in v.items()}
                if k == "remainder_slices" and isinstance(v, dict)
                else _slices_as_tuples(v)
            )
            for k, v in state.items()
        }
    return state


def _native_or_python(source: Any) -> Any:
    """The engine's own source for sources that have one (read in C++ without the GIL, e.g.
    ArrayRecordDataSource), else the Python object itself."""
    native = getattr(source, "_spelt_native_source", None)
    return native() if native is not None else source


class _ParentSpec:
    """An op whose elements have the spec of its first parent's (Grain's shuffle, slice,
    repeat, filter, prefetch, mix, ...)."""

    @property
    def _element_spec(self) -> Any:
        return element_spec.get_element_spec(self._parents[0])


class _TransformSpec:
    """A map, random_map or map_with_index: the spec is its transform's ``output_spec`` of the
    parent's spec (Grain's _ElementSpecFromTransform mixins)."""

    @property
    def _element_spec(self) -> Any:
        transform = _callables.transform_of(self._args[0])
        return element_spec.transformed_spec(
            transform, transforms.get_pretty_transform_name(transform), self._parents[0]
        )


class _BatchSpec:
    """A batch: the parent's spec with a leading batch dimension (``batched_spec``); and
    Grain's SupportsSharedMemoryOutput protocol."""

    def enable_shared_memory_output(self) -> None:
        """Accepted for Grain code (its DataLoader calls it before ``mp_prefetch``); changes
        nothing: batches computed by Spelt's workers always reach the consumer through shared
        memory (the workers' arenas, docs/workers.md), without Grain's extra copy."""

    @property
    def _element_spec(self) -> Any:
        batch_size, drop_remainder, batch_fn = self._args[:3]
        return element_spec.batched_spec(
            element_spec.get_element_spec(self._parents[0]), batch_size, drop_remainder, batch_fn
        )


class _SourceMapDataset(MapDataset):
    def __init__(self, source: Any):
        super().__init__()
        if not hasattr(source, "__len__") or not hasattr(source, "__getitem__"):
            raise TypeError(
                f"a data source needs __len__ and __getitem__, got {type(source).__name__}"
            )
        self._source = source

    def _make_node(self):
        return _core.source(_native_or_python(self._source))

    def __str__(self) -> str:
        return f"SourceMapDataset(source={type(self._source).__name__})"  # Grain's


def _int64_range(start: int, stop: int, step: int) -> tuple[int, int, int]:
    """(start, stop, step) of the engine's int64 range with the elements of Python's
    ``range(start, stop, step)``: the same values where they fit in int64. OverflowError if it
    has more than sys.maxsize elements (Python's and Grain's ``len()``) or an element or the
    step does not fit in int64."""
    r = builtins.range(start, stop, step)
    length = len(r)
    if all(-_MAX_INDEX <= v <= _MAX_INDEX for v in (start, stop, step)):
        return start, stop, step
    if length == 0:
        return 0, 0, 1
    step = step if length > 1 else (1 if step > 0 else -1)
    bounds = (r[0], r[-1] + (1 if step > 0 else -1), step)
    if not all(-_MAX_INDEX <= v <= _MAX_INDEX for v in bounds):
        raise OverflowError(
            f"MapDataset.range({start}, {stop}, {r.step}): the elements and the step must fit"
            " in int64"
        )
    return bounds


class _RangeMapDataset(MapDataset):
    def __init__(self, start: int, stop: int, step: int):
        super().__init__()
        self._args = (start, stop, step)
        self._int64_args = _int64_range(start, stop, step)

    def _make_node(self):
        return _core.range(*self._int64_args)

    @property
    def _element_spec(self) -> Any:
        return element_spec.ShapeDtypeStruct(shape=(), dtype=np.int64)

    def __str__(self) -> str:
        start, stop, step = self._args
        return f"RangeMapDataset(start={start}, stop={stop}, step={step})"


def _check_map_datasets(datasets: Any, what: str) -> tuple[MapDataset, ...]:
    datasets = tuple(datasets)
    for d in datasets:
        if not isinstance(d, MapDataset):
            raise TypeError(f"{what}: expected MapDatasets, got {type(d).__name__}")
    return datasets


class _ConcatenateMapDataset(_ParentSpec, MapDataset):
    """Grain's ConcatenateMapDataset; the components are the parents."""

    def __init__(self, datasets: Sequence[MapDataset]):
        super().__init__(_check_map_datasets(datasets, "concatenate"))
        self._node  # errors surface here, as in Grain  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.concatenate([p._node for p in self._parents])

    def __str__(self) -> str:  # Grain's ConcatenateMapDataset is a MixedMapDataset
        return f"MixedMapDataset[{len(self._parents)} parents]"

    def __repr__(self) -> str:  # Grain's names its selection map's class (and address)
        return (
            f"MixedMapDataset(parent_lengths={[len(p) for p in self._parents]},"
            f" selection_map=<_ConcatSelectionMap of lengths {[len(p) for p in self._parents]}>)"
        )


class _MixMapDataset(_ParentSpec, MapDataset):
    """Grain's MixedMapDataset; the components are the parents."""

    def __init__(self, datasets: Sequence[MapDataset], weights: Sequence[float] | None):
        super().__init__(_check_map_datasets(datasets, "mix"))
        self._weights = None if weights is None else [float(w) for w in weights]
        empty = [f"index {i} ({p})" for i, p in enumerate(self._parents) if len(p) == 0]
        if empty and (weights is None or 0 not in self._weights):  # Grain's message
            raise ValueError(
                "All datasets must have positive length for mixing, but dataset(s) at"
                f" {', '.join(empty)} have length 0."
            )
        self._node  # errors surface here, as in Grain  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.mix([p._node for p in self._parents], self._weights)

    def __str__(self) -> str:
        return f"MixedMapDataset[{len(self._parents)} parents]"

    def __repr__(self) -> str:
        weights = self._weights or [1.0] * len(self._parents)
        scale = 100 / min(weights)
        proportions = tuple(int(w * scale) for w in weights) if self._weights else weights
        proportions = tuple(int(p) for p in proportions)
        return (
            f"MixedMapDataset(parent_lengths={[len(p) for p in self._parents]},"
            f" selection_map=SelectionWithProportionsMap(proportions={proportions},"
            f" length={len(self)}))"
        )


class _SelectMapDataset(_ParentSpec, MapDataset):
    """Grain's MixedMapDataset with a user's DatasetSelectionMap (called per index, since the
    map is user Python); reads each parent with one batched read per chunk."""

    def __init__(self, datasets: Sequence[MapDataset], selection_map: Any):
        super().__init__(_check_map_datasets(datasets, "select_from_datasets"))
        self._selection_map = selection_map

    def __len__(self) -> int:
        return len(self._selection_map)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.slice(index)
        dataset_index, index_in_dataset = self._selection_map[index]
        return self._parents[dataset_index][index_in_dataset]

    def _getitems(self, indices: Sequence[int]) -> list[Any]:
        by_parent: dict[int, tuple[list[int], list[int]]] = {}
        for position, index in enumerate(indices):
            d, k = self._selection_map[index]
            keys, positions = by_parent.setdefault(d, ([], []))
            keys.append(k)
            positions.append(position)
        out: list[Any] = [None] * len(indices)
        for d, (keys, positions) in by_parent.items():
            for position, element in zip(positions, self._parents[d]._getitems(keys)):
                out[position] = element
        return out

    def __str__(self) -> str:
        return f"MixedMapDataset[{len(self._parents)} parents]"

    def __repr__(self) -> str:
        return (
            f"MixedMapDataset(parent_lengths={[len(p) for p in self._parents]},"
            f" selection_map={self._selection_map!r})"
        )


class _OpMapDataset(MapDataset):
    """A transformation of one parent MapDataset: the engine node is
    ``_build(parent_node, *args)``, a typed method of ``_core.MapDataset``."""

    _build: Callable[..., Any]

    def __init__(self, parent: MapDataset, *args: Any):
        super().__init__(parent)
        self._args = args
        self._node  # build now so that argument errors surface here  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._build(self._parents[0]._node, *self._args)

    def __str__(self) -> str:
        return self._node.name()


class _OpIterDataset(IterDataset):
    """A transformation of one parent IterDataset: the engine node is
    ``_build(parent_node, *args)``, a typed method of ``_core.IterDataset``."""

    _build: Callable[..., Any]

    def __init__(self, parent: IterDataset, *args: Any):
        super().__init__(parent)
        self._args = args
        self._node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._build(self._parents[0]._node, *self._args)

    def __str__(self) -> str:
        return self._node.name()


def _op(
    base: type,
    name: str,
    build: Callable[..., Any],
    *mixins: type,
    describe: Callable[[Any], str] | None = None,
) -> type:
    """A module-level transformation class (picklable by reference) built by ``build``;
    ``describe(ds)`` is its str() (Grain's), if given."""
    namespace = {"_build": staticmethod(build), "__module__": __name__}
    if describe is not None:
        namespace["__str__"] = describe
    cls = type(name, (*mixins, base), namespace)
    cls.__qualname__ = name
    return cls


def _transform_op(base: type, name: str, build: Callable[..., Any], *mixins: type) -> type:
    """A map, random_map or map_with_index class: its spec is its transform's output_spec,
    its str() Grain's."""
    return _op(base, name, build, *mixins, _TransformSpec, describe=_transform_str)


def _transform_str(ds: Any) -> str:
    """Grain's str() of a map, random_map, map_with_index or filter."""
    transform = _callables.transform_of(ds._args[0])
    return f"{ds._node.name()}(transform={transforms.get_pretty_transform_name(transform)})"


def _batch_str(ds: Any) -> str:
    return f"{ds._node.name()}(batch_size={ds._args[0]}, drop_remainder={ds._args[1]})"


def _slice_str(ds: Any) -> str:
    start, stop, step = builtins.slice(*ds._args).indices(len(ds._parents[0]))
    return f"SliceMapDataset[{start}:{stop}:{step}]"


class _IndexPlan:
    """The index of an iterator's next element in its state, as Grain's iterators keep it:
    ``{"next_index": n}`` (to_iter_dataset)."""

    def next_index(self, state: dict[str, Any]) -> int:
        return state["next_index"]

    def state_at(self, index: int, state: dict[str, Any]) -> dict[str, Any]:
        """The state of the same iterator about to return element ``index``, reached without
        reading any element."""
        return {"next_index": index}


class _CountedPlan(_IndexPlan):
    """``state[field]`` counts the elements returned, next to the parent's state (Grain's
    random_map, map_with_index, limit)."""

    def __init__(self, parent: _IndexPlan, field: str):
        self._parent, self._field = parent, field

    def next_index(self, state: dict[str, Any]) -> int:
        return state[self._field]

    def state_at(self, index: int, state: dict[str, Any]) -> dict[str, Any]:
        return {"parent": self._parent.state_at(index, state["parent"]), self._field: index}


class _BatchedPlan(_IndexPlan):
    """Batches of batch_size parent elements; the state is the parent's (Grain's batch)."""

    def __init__(self, parent: _IndexPlan, batch_size: int):
        self._parent, self._batch_size = parent, batch_size

    def next_index(self, state: dict[str, Any]) -> int:
        return -(-self._parent.next_index(state) // self._batch_size)

    def state_at(self, index: int, state: dict[str, Any]) -> dict[str, Any]:
        return self._parent.state_at(index * self._batch_size, state)


class _SameIndex:
    """An op whose iterator state is its parent's (Grain's map, thread prefetch)."""

    def _index_plan(self) -> _IndexPlan | None:
        return self._parents[0]._index_plan()


class _CountedIndex:
    """An op that counts the elements it returned in ``state[_COUNT]``."""

    _COUNT: str

    def _index_plan(self) -> _IndexPlan | None:
        parent = self._parents[0]._index_plan()
        return None if parent is None else _CountedPlan(parent, self._COUNT)


class _RngCount(_CountedIndex):
    _COUNT = "index_for_rng"


class _Counter(_CountedIndex):
    _COUNT = "counter"


class _BatchIndex:
    def _index_plan(self) -> _IndexPlan | None:
        parent = self._parents[0]._index_plan()
        return None if parent is None else _BatchedPlan(parent, self._args[0])


_SeedMapDataset = _op(_OpMapDataset, "_SeedMapDataset", _core.MapDataset.seed, _ParentSpec)
_ShuffleMapDataset = _op(_OpMapDataset, "_ShuffleMapDataset", _core.MapDataset.shuffle, _ParentSpec)
_SliceMapDataset = _op(
    _OpMapDataset, "_SliceMapDataset", _core.MapDataset.slice, _ParentSpec, describe=_slice_str
)
_RepeatMapDataset = _op(
    _OpMapDataset,
    "_RepeatMapDataset",
    _core.MapDataset.repeat,
    _ParentSpec,
    describe=lambda ds: f"RepeatMapDataset(num_epochs={ds._args[0]})",
)
_MapMapDataset = _transform_op(_OpMapDataset, "_MapMapDataset", _core.MapDataset.map)
_RandomMapMapDataset = _transform_op(
    _OpMapDataset, "_RandomMapMapDataset", _core.MapDataset.random_map
)
_MapWithIndexMapDataset = _transform_op(
    _OpMapDataset, "_MapWithIndexMapDataset", _core.MapDataset.map_with_index
)
_FilterMapDataset = _op(
    _OpMapDataset,
    "_FilterMapDataset",
    _core.MapDataset.filter,
    _ParentSpec,
    describe=_transform_str,
)
_BatchMapDataset = _op(
    _OpMapDataset, "_BatchMapDataset", _core.MapDataset.batch, _BatchSpec, describe=_batch_str
)
_SeedIterDataset = _op(_OpIterDataset, "_SeedIterDataset", _core.IterDataset.seed, _ParentSpec)
_MapIterDataset = _transform_op(
    _OpIterDataset, "_MapIterDataset", _core.IterDataset.map, _SameIndex
)
_RandomMapIterDataset = _transform_op(
    _OpIterDataset, "_RandomMapIterDataset", _core.IterDataset.random_map, _RngCount
)
_MapWithIndexIterDataset = _transform_op(
    _OpIterDataset, "_MapWithIndexIterDataset", _core.IterDataset.map_with_index, _Counter
)
_BatchIterDataset = _op(
    _OpIterDataset,
    "_BatchIterDataset",
    _core.IterDataset.batch,
    _BatchIndex,
    _BatchSpec,
    describe=_batch_str,
)


class _FilterIterDataset(_ParentSpec, _OpIterDataset):
    """Grain's FilterIterDataset; the filter is named in the filter-threshold messages as
    Grain names it."""

    _build = staticmethod(_core.IterDataset.filter)

    def __init__(self, parent: IterDataset, fn: Callable[[Any], bool]):
        super().__init__(parent, fn, _callables.filter_name(fn))

    __str__ = _transform_str


_SeedMapDataset._no_stage = _SeedIterDataset._no_stage = True  # not a stage in summaries
MapDataset._Seed = _SeedMapDataset
MapDataset._Map = _MapMapDataset
MapDataset._RandomMap = _RandomMapMapDataset
MapDataset._MapWithIndex = _MapWithIndexMapDataset
MapDataset._Filter = _FilterMapDataset
MapDataset._Batch = _BatchMapDataset
IterDataset._Seed = _SeedIterDataset
IterDataset._Map = _MapIterDataset
IterDataset._RandomMap = _RandomMapIterDataset
IterDataset._MapWithIndex = _MapWithIndexIterDataset
IterDataset._Filter = _FilterIterDataset
IterDataset._Batch = _BatchIterDataset


class _PrefetchIterDataset(_ParentSpec, IterDataset):
    def __init__(
        self, parent: MapDataset, read_options: options_lib.ReadOptions, allow_nones: bool
    ):
        super().__init__(parent)
        self._read_options = read_options
        self._allow_nones = allow_nones

    def _make_node(self):
        return self._parents[0]._node.to_iter(
            self._read_options.num_threads,
            self._read_options.prefetch_buffer_size,
            self._allow_nones,
        )

    def __str__(self) -> str:
        return (
            f"PrefetchIterDataset(read_options={self._read_options},"
            f" allow_nones={self._allow_nones})"
        )

    def _index_plan(self) -> _IndexPlan:
        return _IndexPlan()


class ProcessPrefetchIterDataset(_PrefetchIterDataset):
    """``parent.to_iter_dataset()`` with the elements computed by worker processes.

    Its engine node is the ordered core with a worker-process executor
    (cpp/python/process_executor.cc): workers compute chunks of consecutive indices with their
    own copy of `parent` (once per chunk); the merge in index order and the state
    ``{"next_index": n}`` are those of to_iter_dataset. The workers belong to the node's
    PoolKeeper, which keeps them warm between iterators (docs/workers.md).
    """

    _keeper_observer: Callable[[Any], Any] | None = None  # set on profiled copies (_summary.py)

    def __init__(
        self,
        parent: MapDataset,
        read_options: options_lib.ReadOptions,
        allow_nones: bool,
        options: options_lib.MultiprocessingOptions,
        worker_init_fn: Callable[[int, int], None] | None,
        autotune: autotune_lib.Limits | None = None,
    ):
        super().__init__(parent, read_options, allow_nones)
        self._options = options
        self._worker_init_fn = worker_init_fn
        self._autotune = autotune
        self._keeper = self._new_keeper()

    def _new_keeper(self) -> keeper_lib.PoolKeeper | autotune_lib.TunedKeeper:
        """The stage's PoolKeeper (a TunedKeeper if autotuned). Shallow copies (the profiled
        twin of the execution summary) share it, so that tracked and untracked iterators lease
        the same warm pool."""
        if self._autotune is not None:
            return autotune_lib.TunedKeeper(
                self._parents[0], self._worker_init_fn, self._autotune, anchor=self
            )
        return keeper_lib.PoolKeeper(
            self._parents[0],
            self._worker_init_fn,
            self._options.num_workers,
            capacity=self._options.per_worker_buffer_size + 1,
            anchor=self,
        )

    def __copy__(self):
        twin = type(self).__new__(type(self))
        twin.__dict__.update(super().__getstate__())  # the keeper is shared
        return twin

    def __getstate__(self):
        state = super().__getstate__()
        del state["_keeper"]  # the workers are this process's: an unpickled copy has its own
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._keeper = self._new_keeper()

    def _make_node(self):
        parent, options = self._parents[0], self._options
        keeper = self._keeper
        if self._keeper_observer is not None:  # the execution summary counts worker time
            keeper = self._keeper_observer(keeper)
        buffer_size = options.per_worker_buffer_size
        if self._autotune is not None:  # chunks beyond what the pool sends wait in its queue
            buffer_size = self._autotune.max_buffer_size
        return _core.process_prefetch(
            parent._node, keeper, self._allow_nones, options.num_workers, buffer_size
        )

    def __str__(self) -> str:
        tuned = "" if self._autotune is None else ", autotune=True"
        return (
            f"ProcessPrefetchIterDataset(num_workers={self._options.num_workers},"
            f" per_worker_buffer_size={self._options.per_worker_buffer_size}{tuned})"
        )


def _parallel_stage(
    stage: _PrefetchIterDataset,
    options: options_lib.MultiprocessingOptions,
    worker_init_fn: Callable[[int, int], None] | None,
    autotune: autotune_lib.Limits | None = None,
) -> IterDataset:
    """A to_iter_dataset stage read in parallel (IterDataset.mp_prefetch): by worker processes
    if its MapDataset calls Python (its engine node is serial), else, since native work runs
    without the GIL, by at least num_workers threads (same output and state, fewer copies)."""
    parent = stage._parents[0]
    if parent._node.serial():
        return ProcessPrefetchIterDataset(
            parent, stage._read_options, stage._allow_nones, options, worker_init_fn, autotune
        )
    if worker_init_fn is not None:
        warnings.warn(
            "mp_prefetch: the pipeline calls no Python before to_iter_dataset, so it is read with"
            " threads, not worker processes, and worker_init_fn is not called"
        )
    n = options.num_workers
    threads = options_lib.ReadOptions(
        num_threads=max(stage._read_options.num_threads, n),
        prefetch_buffer_size=max(stage._read_options.prefetch_buffer_size, n),
    )
    return _PrefetchIterDataset(parent, threads, stage._allow_nones)


def _replace_stages(ds: Any, replace: Callable[[Any], IterDataset]) -> Any:
    """`ds` with every to_iter_dataset stage below it replaced by replace(stage); the datasets in
    between are shallow copies with new parents (their engine nodes are rebuilt lazily), so they
    run unchanged in this process, on top of the parallel stage."""
    if isinstance(ds, _PrefetchIterDataset):  # ProcessPrefetchIterDataset too
        return replace(ds)
    if not isinstance(ds, IterDataset):
        return ds
    parents = tuple(_replace_stages(p, replace) for p in ds.parents)
    if all(new is old for new, old in zip(parents, ds.parents)):
        return ds
    rebuilt = copy.copy(ds)
    rebuilt._parents = parents  # copy.copy dropped the node (_Node.__getstate__)
    return rebuilt


def _apply(ds: Any, transformations: Any) -> Any:
    """Applies one transform or a sequence of them, dispatching on the transform type."""
    if not hasattr(transformations, "__iter__"):
        transformations = [transformations]
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
            if isinstance(ds, IterDataset):
                ds = FlatMapIterDataset(ds, t)
            else:
                from spelt import _flat_map  # pylint: disable=import-outside-toplevel

                ds = _flat_map.FlatMapMapDataset(ds, t)
        else:  # Grain's error and message (apply_transformations)
            raise NotImplementedError(f"Transformation type: {t} is not supported.")
    return ds


class FlatMapIterDataset(IterDataset):
    """Each element becomes the elements of ``transform.flat_map(element)`` (Grain's
    ``grain.experimental.FlatMapIterDataset``). State: parent state + position in the split."""

    def __init__(self, parent: IterDataset, transform: transforms.FlatMap):
        super().__init__(parent)
        self._transform = transform

    def _make_node(self):
        fn = (
            self._transform.flat_map
            if isinstance(self._transform, transforms.FlatMap)
            else self._transform
        )
        return self._stream_nodes()[0].flat_map(fn)


def apply_transformations(ds: Any, transformations: Any) -> Any:
    """Deprecated alias of ``ds.apply(transformations)`` (Grain's ``apply_transformations``)."""
    return _apply(ds, transformations)


def get_next_index(ds_iter: DatasetIterator) -> int:
    """The index of the element the iterator returns next (Grain's ``get_next_index``).
    NotImplementedError for iterators that cannot tell (e.g. after a filter)."""
    return ds_iter._get_next_index()


def set_next_index(ds_iter: DatasetIterator, index: int) -> None:
    """Moves the iterator so that it returns element ``index`` next, without reading the
    elements before it (Grain's ``set_next_index``)."""
    ds_iter._set_next_index(index)
