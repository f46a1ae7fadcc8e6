"""Grain 0.2.18's thread prefetch (grain/_src/python/dataset/transformations/prefetch.py):
``ThreadPrefetchIterDataset`` and ``ThreadPrefetchDatasetIterator``, run by the engine's
thread prefetch (cpp/src/ops/thread_prefetch.cc)."""

from __future__ import annotations

from typing import Any

from spelt import _args
from spelt import _base
from spelt import _core


def _buffer_size(value: Any) -> int:
    value = _args.int_arg(value, "prefetch_buffer_size")
    if value < 0:  # Grain's message
        raise ValueError(f"`prefetch_buffer_size` must be greater than or equal to 0, got {value}.")
    return value


class ThreadPrefetchIterDataset(_base.ParentSpec, _base.IterDataset):
    """``parent`` read ahead by a thread of each iterator, up to ``prefetch_buffer_size``
    elements (0: no thread; ``next()`` reads the parent).

    The state is the parent's state after the last element returned (read-ahead never counts,
    so a state restores with any buffer size); ``set_state`` drops the read-ahead and the
    thread starts again at the next ``next()``. An error of the parent is raised when reached,
    after every element before it. The thread starts at the first ``next()`` or
    ``start_prefetch()``. ValueError if prefetch_buffer_size < 0. Iterators are thread-safe
    (calls are serialised).
    """

    def __init__(self, parent: _base.IterDataset, *, prefetch_buffer_size: int):
        super().__init__(parent)
        self._prefetch_buffer_size = _buffer_size(prefetch_buffer_size)

    def _make_node(self):
        return _core.thread_prefetch(self._stream_nodes()[0], self._prefetch_buffer_size)

    def __str__(self) -> str:
        return f"ThreadPrefetchIterDataset(prefetch_buffer_size={self._prefetch_buffer_size})"


class ThreadPrefetchDatasetIterator(_base.EngineDatasetIterator):
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
