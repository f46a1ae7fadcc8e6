"""Grain's legacy ``*Operation`` classes (``grain.python.MapOperation``, ...) and their place in
the DataLoader.

An operation is a callable from an iterator of ``Record`` to an iterator of ``Record``
(grain/_src/python/operations.py, Grain 0.2.18). Called directly, these classes behave as
Grain's: each output record carries the input's metadata without its ``record_key`` (for a
batch, the last input's), and an exception of the user function is re-raised as ValueError.

In a DataLoader (``operations=[...]``, mixed freely with transformations), the four classes
run as the transformations they stand for, so they run per record, in worker processes when
there are workers, with the engine's batching: ``BatchOperation`` is ``transforms.Batch`` (as in
Grain), ``MapOperation``/``FilterOperation``/``RandomMapOperation`` are ``Map``/``Filter``/
``RandomMap`` (the RandomMap gets the record's generator, Grain's ``metadata.rng``). Any other
operation (a subclass, or a user callable) runs on the stream in this process as
``OperationIterDataset``: it gets ``Record``s whose metadata is the sampler's for the
record (``sampler[g]``, without ``record_key`` once batched), and the iterator state is the
state below it, as in Grain.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from spelt import _core
from spelt import _tree
from spelt import dataset
from spelt import record
from spelt import sharding
from spelt import transforms

_log = logging.getLogger(__name__)

_IN = TypeVar("_IN")
_OUT = TypeVar("_OUT")


class Operation(Protocol):
    """``__call__(Iterator[Record]) -> Iterator[Record]`` (Grain's protocol)."""

    def __call__(self, input_iterator: Iterator[record.Record]) -> Iterator[record.Record]: ...


def _deprecated(name: str, replacement: str) -> None:
    _log.error("Applying deprecated PyGrain %s. Please use the %s.", name, replacement)


def _call_user(fn: Callable[..., Any], what: str, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as e:
        raise ValueError(f"PyGrain encountered an error when calling {what} function.") from e


@dataclasses.dataclass
class MapOperation(Generic[_IN, _OUT]):
    """Record-wise ``map_function(data)``; errors are re-raised as ValueError (Grain's)."""

    map_function: Callable[[_IN], _OUT]

    def __call__(self, input_iterator: Iterator[record.Record]) -> Iterator[record.Record]:
        _deprecated("MapOperation", "grain.python.MapTransform")
        for r in input_iterator:
            data = _call_user(self.map_function, "map", r.data)
            yield record.Record(r.metadata.remove_record_key(), data)


@dataclasses.dataclass
class RandomMapOperation(Generic[_IN, _OUT]):
    """Record-wise ``random_map_function(data, metadata.rng)``; errors re-raised as ValueError."""

    random_map_function: Callable[[_IN, np.random.Generator], _OUT]

    def __call__(self, input_iterator: Iterator[record.Record]) -> Iterator[record.Record]:
        _deprecated("RandomMapOperation", "grain.python.RandomMapTransform")
        for r in input_iterator:
            data = _call_user(self.random_map_function, "random map", r.data, r.metadata.rng)
            yield record.Record(r.metadata.remove_record_key(), data)


@dataclasses.dataclass
class FilterOperation(Generic[_IN]):
    """Keeps the records whose ``condition_function(data)`` is true; errors as ValueError."""

    condition_function: Callable[[_IN], bool]

    def __call__(self, input_iterator: Iterator[record.Record]) -> Iterator[record.Record]:
        _deprecated("FilterOperation", "grain.python.FilterTransform")
        for r in input_iterator:
            if _call_user(self.condition_function, "condition", r.data):
                yield record.Record(r.metadata.remove_record_key(), r.data)


def _check_same_structure(records: Sequence[Any]) -> None:
    """TypeError (Grain's message) if a record's tree structure differs from the first's."""
    first = records[0]
    positions = []
    for position, other in enumerate(records[1:], start=1):
        try:
            _tree.assert_same_structure(first, other)
        except ValueError:
            positions.append(position)
    if positions:
        raise TypeError(
            f"Record structures do not match. Record at position 0 has structure {first},"
            f" while records at positions {positions} have structures"
            f" {[records[p] for p in positions]}."
        )


@dataclasses.dataclass
class BatchOperation(Generic[_IN, _OUT]):
    """Groups ``batch_size`` consecutive records (the last, shorter group unless
    ``drop_remainder``) into one: ``batch_fn(list of data)``, by default np.stack leaf by leaf
    of records of one tree structure (TypeError naming the positions that differ). The output
    metadata is the last record's without ``record_key``. ValueError if batch_size <= 0."""

    batch_size: int
    drop_remainder: bool = False
    batch_fn: Callable[[Sequence[_IN]], _OUT] | None = None

    def __post_init__(self):
        if self.batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer. Got {self.batch_size}.")
        self._use_shared_memory = False
        self._display_deprecation_message = True
        if self.batch_fn is None:
            self.batch_fn = self._default_batch_fn

    def __call__(self, input_iterator: Iterator[record.Record]) -> Iterator[record.Record]:
        if self._display_deprecation_message:
            _deprecated("BatchOperation", "grain.python.Batch transformation")
        pending: list[record.Record] = []
        for r in input_iterator:
            pending.append(r)
            if len(pending) == self.batch_size:
                yield self._batch(pending)
                pending = []
        if pending and not self.drop_remainder:
            yield self._batch(pending)

    def _batch(self, records: list[record.Record]) -> record.Record:
        data = self.batch_fn([r.data for r in records])
        return record.Record(records[-1].metadata.remove_record_key(), data)

    def _enable_shared_memory(self) -> None:
        """Default batches then hold SharedMemoryArrayMetadata leaves (Grain's)."""
        self._use_shared_memory = True

    def disable_deprecation_message(self) -> None:
        self._display_deprecation_message = False

    def _default_batch_fn(self, values: Sequence[Any]) -> Any:
        _check_same_structure(values)

        def stack(*leaves: Any) -> Any:
            first = np.asanyarray(leaves[0])
            if not self._use_shared_memory or first.dtype.hasobject:
                return np.stack(leaves)
            from spelt import shared_memory  # pylint: disable=import-outside-toplevel

            out = shared_memory.SharedMemoryArray((len(leaves),) + first.shape, first.dtype)
            return np.stack(leaves, out=out).metadata

        return _tree.map_structure(stack, *values)


class _MapOperationTransform(transforms.Map):
    def __init__(self, fn: Callable[[Any], Any]):
        self._fn = fn

    def map(self, element):
        return _call_user(self._fn, "map", element)


class _RandomMapOperationTransform(transforms.RandomMap):
    def __init__(self, fn: Callable[[Any, np.random.Generator], Any]):
        self._fn = fn

    def random_map(self, element, rng):
        return _call_user(self._fn, "random map", element, rng)


class _FilterOperationTransform(transforms.Filter):
    def __init__(self, fn: Callable[[Any], bool]):
        self._fn = fn

    def filter(self, element):
        return _call_user(self._fn, "condition", element)


def as_transformation(op: Any) -> Any:
    """The transformation a DataLoader runs for ``op``: Grain's four operation classes (exactly
    them, not subclasses) become transformations; anything else is returned unchanged."""
    kind = type(op)
    if kind is BatchOperation:
        return transforms.Batch(
            op.batch_size, drop_remainder=op.drop_remainder, batch_fn=op.batch_fn
        )
    if kind is MapOperation:
        return _MapOperationTransform(op.map_function)
    if kind is RandomMapOperation:
        return _RandomMapOperationTransform(op.random_map_function)
    if kind is FilterOperation:
        return _FilterOperationTransform(op.condition_function)
    return op


def drops_record_key(op: Any) -> bool:
    """Whether records leave ``op`` (as the DataLoader runs it) without ``record_key``: a
    Batch, and Grain's Map/Filter/RandomMap operations, as in Grain."""
    kinds = (
        transforms.Batch,
        _MapOperationTransform,
        _RandomMapOperationTransform,
        _FilterOperationTransform,
    )
    return isinstance(op, kinds)


class OperationIterDataset(dataset.IterDataset):
    """The stream ``operation(records)`` of a DataLoader (Grain's ``_OperationIterDataset``).

    Each element of the parent becomes ``Record(sampler[g], element)``, g being the global
    sampler index of the element (for a batch, of its last record), without ``record_key`` if
    ``keyless`` (see ``drops_record_key``). g comes from the parent's ``{"next_index": n}``
    state (the element is local index n - 1 of this shard); below a stage without such a
    state, from the count of elements read.
    Outputs are the ``data`` of the records the operation yields; the state is the parent's.
    """

    def __init__(
        self,
        parent: dataset.IterDataset,
        operation: Operation,
        sampler: Any,
        shard_options: sharding.ShardOptions,
        keyless: bool,
    ):
        super().__init__(parent)
        if not callable(operation):
            raise TypeError(
                f"DataLoader operations must be transformations or callables on an iterator of"
                f" Records, got {type(operation).__name__}"
            )
        self._operation = operation
        self._sampler = sampler
        self._shard_options = shard_options
        self._keyless = keyless

    def __iter__(self) -> dataset.DatasetIterator:
        return _OperationDatasetIterator(self, iter(self._parents[0]))

    def metadata(self, local_index: int) -> record.RecordMetadata:
        """The sampler's metadata of this shard's element ``local_index``."""
        g = sharding.engine_options(self._shard_options).global_index(local_index)
        metadata = self._sampler[g]
        return metadata.remove_record_key() if self._keyless else metadata

    def run(self, records: Iterator[record.Record]) -> Iterator[record.Record]:
        return iter(self._operation(records))


class _OperationDatasetIterator(dataset.DatasetIterator):
    def __init__(self, ds: OperationIterDataset, parent: dataset.DatasetIterator):
        super().__init__(parent)
        self._ds = ds
        self._seen = 0  # elements read from the parent (its position if its state has none)
        self._outputs = ds.run(self._records())

    def _records(self) -> Iterator[record.Record]:
        for element in self._parent:
            self._seen += 1
            local = self._parent.get_state().get(_core.NEXT_INDEX_KEY, self._seen) - 1
            yield record.Record(self._ds.metadata(local), element)

    def __next__(self) -> Any:
        return next(self._outputs).data

    def get_state(self) -> dict[str, Any]:
        return self._parent.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        self._parent.set_state(state)
        self._seen = state.get(_core.NEXT_INDEX_KEY, 0)
        self._outputs = self._ds.run(self._records())  # drops a group of the old position

    def close(self) -> None:
        self._parent.close()
