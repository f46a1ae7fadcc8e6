"""Grain 0.2.18's thread prefetch (grain/_src/python/dataset/transformations/prefetch.py):
``ThreadPrefetchIterDataset``, ``ThreadPrefetchDatasetIterator`` and ``multithread_prefetch``,
run by the engine's thread prefetch (cpp/src/ops/thread_prefetch.cc) and interleave."""

from __future__ import annotations

import copy
import operator
from typing import Any

from spelt import _core
from spelt import dataset
from spelt import dataset_options
from spelt._interleave import InterleaveIterDataset


def _buffer_size(value: Any) -> int:
    value = operator.index(value)
    if value < 0:  # Grain's message
        raise ValueError(f"`prefetch_buffer_size` must be greater than or equal to 0, got {value}.")
    return value


class ThreadPrefetchIterDataset(dataset.IterDataset):
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
        return _core.thread_prefetch(self._parents[0]._node, self._prefetch_buffer_size)

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


def _sliced(ds: Any, sl: slice) -> Any:
    """A copy of the pipeline ``ds`` reading only ``sl`` of its sources (Grain's
    _set_slice_iter_dataset, without mutating ``ds``): to_iter_dataset stages read their
    MapDataset sliced, datasets with ``set_slice`` slice themselves. ValueError for a source
    that cannot be sliced."""
    if isinstance(ds, dataset._PrefetchIterDataset):  # pylint: disable=protected-access
        read_options, allow_nones = ds._read_options, ds._allow_nones  # pylint: disable=protected-access
        return dataset._PrefetchIterDataset(ds.parents[0].slice(sl), read_options, allow_nones)  # pylint: disable=protected-access
    if hasattr(ds, "set_slice"):
        sliced = copy.copy(ds)
        sliced.set_slice(sl)
        return sliced
    if not ds.parents:
        raise ValueError(f"Cannot slice `IterDataset` source. {type(ds)}")
    sliced = copy.copy(ds)  # copy.copy drops the engine node (dataset._Node)
    sliced._parents = tuple(  # pylint: disable=protected-access
        _sliced(p, sl) if isinstance(p, dataset.IterDataset) else p.slice(sl) for p in ds.parents
    )
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
    The state is the InterleaveIterDataset's (one state per shard). ``sequential_slice`` is
    ignored (shards are strided). ValueError if a source of ``ds`` cannot be sliced."""
    del sequential_slice
    num_threads = operator.index(num_threads)
    if num_threads == 0:
        return ds
    options = dataset_options.WithOptionsIterDataset(
        ds, dataset_options.DatasetOptions()
    ).merged_options
    shards = [
        ds if num_threads == 1 else _sliced(ds, slice(i, None, num_threads))
        for i in range(num_threads)
    ]
    out = InterleaveIterDataset(shards, cycle_length=num_threads, iter_buffer_size=buffer_size)
    return dataset_options.WithOptionsIterDataset(out, options)
