"""Grain 0.2.18's thread prefetch (grain/_src/python/dataset/transformations/prefetch.py):
``ThreadPrefetchIterDataset``, ``ThreadPrefetchDatasetIterator`` and ``multithread_prefetch``,
run by the engine's thread prefetch (cpp/src/ops/thread_prefetch.cc) and interleave."""

from __future__ import annotations

import copy
import operator
from typing import Any

from spelt import _callables
from spelt import _core
from spelt import dataset
from spelt import dataset_options
from spelt._interleave import InterleaveIterDataset


def _buffer_size(value: Any) -> int:
    value = operator.index(value)
    if value < 0:  # Grain's message
        raise ValueError(f"`prefetch_buffer_size` must be greater than or equal to 0, got {value}.")
    return value


class ThreadPrefetchIterDataset(dataset._SameIndex, dataset._ParentSpec, dataset.IterDataset):  # pylint: disable=protected-access
    """``parent`` read ahead by a thread of each iterator, up to ``prefetch_buffer_size``
    elements (0: no thread; ``next()`` reads the parent).

    The state is the parent's state after the last element returned (read-ahead never counts,
    so a state restores with any buffer size); ``set_state`` drops the read-ahead and the
    thread starts again at the next ``next()``. An error of the parent is raised when reached,
    after every element before it. The thread starts at the first ``next()`` or
    ``start_prefetch()``. ValueError if prefetch_buffer_size < 0. Iterators are thread-safe
    (calls are serialised).
    """

    def __init__(self, parent: dataset.IterDataset, *, prefetch_buffer_size: int):
        super().__init__(parent)
        self._prefetch_buffer_size = _buffer_size(prefetch_buffer_size)

    def _make_node(self):
        return _core.thread_prefetch(self._stream_nodes()[0], self._prefetch_buffer_size)

    def __str__(self) -> str:
        return f"ThreadPrefetchIterDataset(prefetch_buffer_size={self._prefetch_buffer_size})"


class ThreadPrefetchDatasetIterator(dataset._NativeDatasetIterator):  # pylint: disable=protected-access
    """Reads ``parent`` (any iterator with ``get_state()`` and ``set_state()``) ahead on a
    thread, up to ``prefetch_buffer_size`` elements, with ThreadPrefetchIterDataset's state and
    restore rules. ``close()`` closes the parent too. ValueError if prefetch_buffer_size < 0."""

    def __init__(self, parent: Any, prefetch_buffer_size: int):
        super().__init__(_core.thread_prefetch_iterator(parent, _buffer_size(prefetch_buffer_size)))
        self._prefetch_buffer_size = prefetch_buffer_size
        self._parent_iterator = parent

    def close(self) -> None:
        super().close()
        close = getattr(self._parent_iterator, "close", None)
        if close is not None:
            close()

    def __str__(self) -> str:
        return f"ThreadPrefetchDatasetIterator(prefetch_buffer_size={self._prefetch_buffer_size})"


class _ShardRandomMap:
    """A random_map function of shard ``index`` of ``count``: the k-th element of the shard
    gets the rng at counter index + k * count (Grain's random_map under a
    MultiprocessingContext), so shards draw different numbers and, over strided shards of one
    stream, each element the numbers of the unsharded pipeline."""

    def __init__(self, fn: Any, index: int, count: int):
        self._fn, self._index, self._count = fn, index, count

    def __call__(self, element: Any, rng: Any) -> Any:
        state = rng.bit_generator.state["state"]
        key = int(state["key"][0]) | int(state["key"][1]) << 64
        k = int(state["counter"][3])
        return self._fn(element, _callables.philox_generator(key, self._index + k * self._count))


def _block(length: int, index: int, count: int) -> slice:
    """Shard ``index`` of ``count`` contiguous near-equal blocks of ``length`` elements (the
    first ``length % count`` one longer)."""
    size, rest = divmod(length, count)
    start = index * size + min(index, rest)
    return slice(start, start + size + (index < rest))


def _sliced(ds: Any, index: int, count: int, sequential: bool) -> Any:
    """A copy of the pipeline ``ds`` for shard ``index`` of ``count`` (Grain's
    _set_slice_iter_dataset with slice(index, None, count), without mutating ``ds``):
    to_iter_dataset stages read their MapDataset sliced (strided, or in contiguous blocks if
    ``sequential``), datasets with ``set_slice`` slice themselves, random_map draws the
    shard's numbers. ValueError for a source that cannot be sliced."""
    if isinstance(ds, dataset._PrefetchIterDataset):  # pylint: disable=protected-access
        parent = ds.parents[0]
        sl = _block(len(parent), index, count) if sequential else slice(index, None, count)
        read_options, allow_nones = ds._read_options, ds._allow_nones  # pylint: disable=protected-access
        return dataset._PrefetchIterDataset(parent.slice(sl), read_options, allow_nones)  # pylint: disable=protected-access
    if hasattr(ds, "set_slice"):
        sliced = copy.copy(ds)
        sliced.set_slice(slice(index, None, count), sequential)
        return sliced
    if not ds.parents:
        raise ValueError(f"Cannot slice `IterDataset` source. {type(ds)}")
    sliced = copy.copy(ds)  # copy.copy drops the engine node (dataset._Node)
    sliced._parents = tuple(_sliced(p, index, count, sequential) for p in ds.parents)  # pylint: disable=protected-access
    if isinstance(ds, dataset._RandomMapIterDataset):  # pylint: disable=protected-access
        fn, seed = ds._args  # pylint: disable=protected-access
        sliced._args = (_ShardRandomMap(fn, index, count), seed)  # pylint: disable=protected-access
    return sliced


def multithread_prefetch(
    ds: dataset.IterDataset,
    num_threads: int,
    buffer_size: int,
    sequential_slice: bool = False,
) -> dataset.IterDataset:
    """Grain's ``multithread_prefetch``: ``ds`` split into ``num_threads`` shards (shard i
    reads elements i, i + num_threads, ... of each source), each read by a thread with a
    buffer of ``buffer_size`` elements, interleaved in turn; ``num_threads`` 0 returns ``ds``.
    With ``sequential_slice``, shard i reads the i-th of num_threads contiguous blocks
    instead. The state is the InterleaveIterDataset's (one state per shard). random_map in a
    shard draws as Grain's does under a MultiprocessingContext (different numbers per shard).
    ValueError if a source of ``ds`` cannot be sliced."""
    num_threads = operator.index(num_threads)
    if num_threads == 0:
        return ds
    options = dataset_options.WithOptionsIterDataset(
        ds, dataset_options.DatasetOptions()
    ).merged_options
    shards = [
        ds if num_threads == 1 else _sliced(ds, i, num_threads, sequential_slice)
        for i in range(num_threads)
    ]
    out = InterleaveIterDataset(shards, cycle_length=num_threads, iter_buffer_size=buffer_size)
    return dataset_options.WithOptionsIterDataset(out, options)
