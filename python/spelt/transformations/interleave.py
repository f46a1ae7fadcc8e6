"""Grain 0.2.18's ``grain.experimental.InterleaveIterDataset``
(grain/_src/python/dataset/transformations/interleave.py), run by the engine's interleave
(cpp/src/ops/interleave.cc): the per-element merge, the per-dataset thread prefetch and the
iterator making ahead are C++; Python is called only to get a dataset of a lazy ``MapDataset``
of datasets and for the datasets' own Python code."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from spelt import _args
from spelt import _base
from spelt import _core
from spelt import dataset_options
from spelt import element_spec


# The keys of the engine's state (spelt/interleave.h).
_CYCLE_INDEX, _NEXT_DATASET, _INDICES, _STATES, _EXHAUSTED, _FUTURE = (
    _core.INTERLEAVE_NEXT_INDEX_IN_CYCLE_KEY,
    _core.INTERLEAVE_NEXT_INDEX_IN_DATASETS_KEY,
    _core.INTERLEAVE_ITERATORS_IN_USE_INDICES_KEY,
    _core.INTERLEAVE_ITERATORS_IN_USE_STATES_KEY,
    _core.INTERLEAVE_EXHAUSTED_KEY,
    _core.INTERLEAVE_FUTURE_STATES_KEY,
)


def _dataset_node(datasets: Any, index: int) -> Any:
    """The engine node of ``datasets[index]``: an IterDataset's, or a MapDataset's
    ``to_iter_dataset()`` (as Grain reads a MapDataset), with the filter thresholds that its own
    WithOptionsIterDatasets set over those of the interleave's iterator. TypeError for anything
    else."""
    ds = _iter_dataset(datasets, index)
    if not isinstance(ds, _base.IterDataset):
        raise TypeError(
            f"InterleaveIterDataset: dataset {index} is a {type(ds).__name__}, not an"
            " IterDataset or a MapDataset"
        )
    options = _base.pipeline_options(ds)
    warn, raise_ = "filter_warn_threshold_ratio", "filter_raise_threshold_ratio"
    fields = dataset_options.set_fields(options)
    if warn not in fields and raise_ not in fields:
        return ds.engine_node
    return _core.with_filter_thresholds(
        ds.engine_node,
        warn in fields,
        options.filter_warn_threshold_ratio,
        raise_ in fields,
        options.filter_raise_threshold_ratio,
    )


def _non_negative(value: Any, what: str) -> int:
    value = _args.int_arg(value, f"InterleaveIterDataset: {what}")
    if value < 0:
        raise ValueError(f"InterleaveIterDataset: {what} must be >= 0, got {value}")
    return value


def _iter_dataset(datasets: Any, index: int) -> _base.IterDataset:
    ds = datasets[index]
    return ds.to_iter_dataset() if isinstance(ds, _base.MapDataset) else ds


# The keys of an interleave's state (Grain's).
STATE_KEYS = frozenset((_CYCLE_INDEX, _NEXT_DATASET, _INDICES, _STATES, _EXHAUSTED, _FUTURE))


class ShardStates:
    """Converts an interleave's state to and from one state per dataset ("shard"; Grain's
    per-dataset state management for elastic restores): the datasets' start states are those
    of fresh iterators, made once each. Not thread-safe."""

    def __init__(self, datasets: Any, cycle_length: int):
        self._datasets, self._cycle_length = datasets, cycle_length
        self._start_states: dict[int, Any] = {}

    def __len__(self) -> int:
        """The number of datasets (shards)."""
        return len(self._datasets)

    def _start_state(self, index: int) -> Any:
        if index not in self._start_states:
            self._start_states[index] = iter(_iter_dataset(self._datasets, index)).get_state()
        return self._start_states[index]

    def split(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        """One ``{"exhausted": 0/1, "state": ...}`` per dataset of the interleave state
        ``state`` (Grain's layout): the datasets in the cycle with their states, the others at
        their start (or future) state."""
        future, first_unopened = state[_FUTURE], state[_NEXT_DATASET]
        indices = state[_INDICES]
        shards: list[Any] = [None] * len(self._datasets)
        for i in range(len(shards)):
            if i >= first_unopened:
                start = future[i] if i in future else self._start_state(i)
                shards[i] = {"exhausted": 0, "state": start}
            elif i not in indices:  # exhausted and out of the cycle
                shards[i] = {"exhausted": 1, "state": self._start_state(i)}
        for index, it_state, exhausted in zip(indices, state[_STATES], state[_EXHAUSTED]):
            shards[index] = {"exhausted": exhausted, "state": it_state}
        return shards

    def join(self, shard_states: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The interleave state of per-dataset states (from ``split``, possibly of another
        sharding): the first cycle_length datasets not exhausted fill the cycle, the others
        start from their states when opened; exhausted ones fill what is left of the cycle."""
        cycle = min(self._cycle_length, len(self._datasets))
        indices, states, exhausted, future = [], [], [], {}
        for i, shard in enumerate(shard_states):
            if shard["exhausted"]:
                continue
            if len(indices) < cycle:
                indices.append(i)
                states.append(shard["state"])
                exhausted.append(0)
            elif shard["state"]:
                future[i] = shard["state"]
        for i, shard in enumerate(shard_states):
            if len(indices) >= cycle:
                break
            if shard["exhausted"]:
                indices.append(i)
                states.append(shard["state"])
                exhausted.append(1)
        # Past every dataset in the cycle, exhausted ones too: they are not opened again. An
        # exhausted dataset out of the cycle and past it is opened again from its state, as in
        # upstream Grain (whose split gives it its start state): ElasticIterator leaves the
        # exhausted shards out of the interleave it restores (spelt/elastic_interleave.py).
        next_in_datasets = max(indices) + 1 if indices else 0
        return {
            _CYCLE_INDEX: 0,
            _NEXT_DATASET: next_in_datasets,
            _INDICES: indices,
            _STATES: states,
            _EXHAUSTED: exhausted,
            _FUTURE: future,
        }


class InterleaveDatasetIterator(_base.EngineDatasetIterator):
    """The iterator of an InterleaveIterDataset: the engine's, whose state has Grain's keys
    (``future_states`` keyed by int dataset index: cpp/python/py_state.h), with Grain's
    per-dataset ("shard") state management for elastic restores (``get_shard_states`` /
    ``set_shard_states``)."""

    def __init__(self, it: Any, ds: InterleaveIterDataset):
        """it: the engine's iterator of ``ds``."""
        super().__init__(it, ds)
        self._name = str(ds)
        self._shards = ds.shard_states()

    def get_shard_states(self) -> list[dict[str, Any]]:
        """One ``{"exhausted": 0/1, "state": ...}`` per dataset (``ShardStates.split``)."""
        return self._shards.split(self.get_state())

    def set_shard_states(self, shard_states: Sequence[dict[str, Any]]) -> None:
        """Restores per-dataset states (``ShardStates.join``)."""
        self.set_state(self._shards.join(shard_states))

    def __str__(self) -> str:
        return self._name.replace("InterleaveIterDataset", "InterleaveDatasetIterator")


class InterleaveIterDataset(_base.IterDataset):
    """Interleaves ``datasets`` (a sequence of IterDatasets or MapDatasets, or a MapDataset of
    them, read lazily), taking one element from each of at most ``cycle_length`` open
    iterators in turn; an exhausted iterator's slot takes the next dataset (Grain's order).
    ``cycle_length`` >= the number of datasets mixes them evenly, 1 chains them.

    Each dataset is read through a thread prefetch of ``iter_buffer_size`` elements (0: read
    when needed, in ``next()``); with ``num_make_iter_threads`` > 0, the iterators of the next
    ``make_iter_buffer_size`` datasets are made ahead on threads of their own.

    State (Grain's): ``{"next_index_in_cycle", "next_index_in_datasets",
    "iterators_in_use_indices", "iterators_in_use_states", "exhausted", "future_states"}``;
    a dataset's state is the one after its last element returned. ``get_state()`` opens the
    slots not yet opened, as Grain's does. ValueError on cycle_length <= 0 or a negative
    option; TypeError naming it for a length or option that is not an int, and (at iteration)
    if an entry of ``datasets`` is not a dataset.
    Thread-safety: as every Spelt iterator (calls are serialised).
    """

    def __init__(
        self,
        datasets: Sequence[_base.IterDataset | _base.MapDataset] | _base.MapDataset,
        *,
        cycle_length: int,
        num_make_iter_threads: int = 1,
        make_iter_buffer_size: int = 1,
        iter_buffer_size: int = 1,
    ):
        # No parents, as in Grain: `datasets` may be a lazy MapDataset, evaluated per iterator.
        super().__init__()
        self._datasets = datasets
        self._cycle_length = _args.int_arg(cycle_length, "InterleaveIterDataset: cycle_length")
        if self._cycle_length <= 0:
            raise ValueError(
                f"InterleaveIterDataset: cycle_length must be positive, got {cycle_length}"
            )
        self._options = (
            _non_negative(num_make_iter_threads, "num_make_iter_threads"),
            _non_negative(make_iter_buffer_size, "make_iter_buffer_size"),
            _non_negative(iter_buffer_size, "iter_buffer_size"),
        )

    @property
    def _spelt_inner_datasets(self) -> Sequence[Any]:
        """The datasets whose data sources an iterator's ``close()`` closes (not those of a
        lazy MapDataset of datasets, made per iterator)."""
        return () if isinstance(self._datasets, _base.MapDataset) else tuple(self._datasets)

    def _make_node(self):
        datasets, count = self._datasets, len(self._datasets)
        if isinstance(datasets, _base.MapDataset):
            return _core.interleave_lazy(
                count,
                functools.partial(_dataset_node, datasets),
                self._cycle_length,
                *self._options,
            )
        nodes = [_dataset_node(datasets, i) for i in range(count)]
        return _core.interleave(nodes, self._cycle_length, *self._options)

    def __iter__(self) -> InterleaveDatasetIterator:
        it = self.engine_node.make_iterator()
        return InterleaveDatasetIterator(it, self)

    def shard_states(self) -> ShardStates:
        """The converter of this interleave's states to and from per-dataset states."""
        return ShardStates(self._datasets, self._cycle_length)

    @property
    def _element_spec(self) -> Any:
        # The first dataset's, as Grain's (the datasets are assumed to be alike).
        return element_spec.get_element_spec(self._datasets[0])

    def select(self, indices: Sequence[int]) -> InterleaveIterDataset:
        """A copy interleaving only ``datasets[j]`` for j in ``indices``, in that order (a
        lazy MapDataset of datasets is read for them)."""
        threads, make_buffer, buffer = self._options
        return InterleaveIterDataset(
            [self._datasets[j] for j in indices],
            cycle_length=self._cycle_length,
            num_make_iter_threads=threads,
            make_iter_buffer_size=make_buffer,
            iter_buffer_size=buffer,
        )

    def set_slice(self, sl: slice, sequential_slice: bool = False) -> None:
        """Keeps ``datasets[sl]`` (Grain's sharding of an interleave; mutates this dataset)."""
        del sequential_slice
        self._datasets = self._datasets[sl]
        self._node_cache = None

    def __str__(self) -> str:
        return (
            f"InterleaveIterDataset([{len(self._datasets)} datasets],"
            f" cycle_length={self._cycle_length})"
        )
