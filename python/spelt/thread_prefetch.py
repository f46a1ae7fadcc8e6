"""Read-ahead of an IterDataset by a background thread (Grain's ``ThreadPrefetchIterDataset``).

Semantics follow Grain 0.2.18 (grain/_src/python/dataset/transformations/prefetch.py): one
thread per iterator reads the parent ahead into a bounded buffer of (element, parent state)
pairs; ``get_state()`` is the parent's state right after the last element returned, so a
restore resumes exactly. The buffer holds Python objects, and the thread spends its time in
the parent's ``next`` (C++ without the GIL for Spelt's own stages) or in a user callable
such as ``jax.device_put``, which also releases the GIL while it copies.
"""

from __future__ import annotations

import copy
import queue
import sys
import threading
import weakref
from typing import Any

from spelt import _summary
from spelt import dataset


class ThreadPrefetchIterDataset(dataset.IterDataset):
    """``parent`` read ahead by a background thread into a buffer of
    ``prefetch_buffer_size`` elements (0: no thread, elements are read on ``next``).

    Output and iterator state are those of ``parent``. Raises ValueError if
    ``prefetch_buffer_size`` is negative (Grain's message).
    """

    def __init__(self, parent: dataset.IterDataset, *, prefetch_buffer_size: int):
        super().__init__(parent)
        if prefetch_buffer_size < 0:
            raise ValueError(
                "`prefetch_buffer_size` must be greater than or equal to 0, got "
                f"{prefetch_buffer_size}."
            )
        self._prefetch_buffer_size = prefetch_buffer_size

    def __iter__(self) -> dataset.DatasetIterator:
        if _summary.tracking_enabled(self):  # debug mode or STAGE_TIMING: count per stage
            return _summary.profiled_iterator(self)
        return ThreadPrefetchDatasetIterator(
            self._parents[0].__iter__(), self._prefetch_buffer_size
        )

    def __str__(self) -> str:
        return f"ThreadPrefetchIterDataset(prefetch_buffer_size={self._prefetch_buffer_size})"


class _Producer:
    """The background thread of one iterator and its buffer. Holds no reference to the
    iterator, so that an iterator dropped without ``close()`` is collected and stops it."""

    def __init__(self, parent: Any, buffer_size: int):
        self.parent = parent
        self.buffer: queue.Queue = queue.Queue(maxsize=buffer_size)
        self._should_stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._should_stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True, name="spelt-thread-prefetch")
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._should_stop.is_set():
                element = next(self.parent)
                self.buffer.put((element, copy.deepcopy(self.parent.get_state()), None))
        except BaseException as e:  # pylint: disable=broad-except  # StopIteration too
            self.buffer.put((None, None, e))

    def _drain(self) -> None:
        while True:
            try:
                self.buffer.get_nowait()
            except queue.Empty:
                return

    def stop(self) -> None:
        """Stops the thread and empties the buffer; the parent is then where the thread left
        it. Idempotent."""
        if self._thread is None:
            return
        self._should_stop.set()
        self._drain()  # unblocks a put, after which the thread sees _should_stop
        if not sys.is_finalizing():  # joining daemon threads at shutdown can hang
            self._thread.join()
        self._thread = None
        self._drain()


class ThreadPrefetchDatasetIterator(dataset._Unpicklable, dataset.DatasetIterator):  # pylint: disable=protected-access
    """Iterator of :class:`ThreadPrefetchIterDataset` over any iterator with ``get_state`` /
    ``set_state`` (Grain's ``ThreadPrefetchDatasetIterator``).

    ``next``, ``get_state``, ``set_state`` and ``close`` are serialised by a lock, so the
    iterator may be shared by threads. An exception raised by the parent (StopIteration
    included) is raised by the ``next`` that reaches it; the next ``next`` reads the parent
    again. ``set_state`` stops the thread, drops the buffer and restores the parent.
    """

    def __init__(self, parent: Any, prefetch_buffer_size: int):
        super().__init__(parent if isinstance(parent, dataset.DatasetIterator) else ())
        if prefetch_buffer_size < 0:
            raise ValueError(
                f"prefetch_buffer_size must be non-negative, got {prefetch_buffer_size}"
            )
        self._iterator = parent
        self._buffer_size = prefetch_buffer_size
        self._producer = _Producer(parent, max(prefetch_buffer_size, 1))
        self._finalizer = weakref.finalize(self, self._producer.stop)
        self._state: dict[str, Any] | None = parent.get_state()
        self._next_index: int | None = 0
        self._closed = False
        self._lock = threading.Lock()

    def start_prefetch(self) -> None:
        """Starts the thread before the first ``next``. ValueError if closed."""
        with self._lock:
            self._check_open()
            if self._buffer_size > 0:
                self._producer.start()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("Attempting to use a closed iterator.")

    def __next__(self) -> Any:
        with self._lock:
            self._check_open()
            if self._buffer_size > 0:
                self._producer.start()
                element, state, error = self._producer.buffer.get()
            else:
                element = next(self._iterator)
                state, error = copy.deepcopy(self._iterator.get_state()), None
            if error is not None:
                self._producer.stop()
                raise error
            self._state = state
            if self._next_index is not None:
                self._next_index += 1
            return element

    def get_state(self) -> dict[str, Any]:
        """The parent's state right after the last element returned (a deep copy)."""
        with self._lock:
            if self._state is None:  # after _set_next_index: the thread is stopped
                self._state = self._iterator.get_state()
            return copy.deepcopy(self._state)

    def set_state(self, state: dict[str, Any]) -> None:
        with self._lock:
            self._producer.stop()
            self._iterator.set_state(state)
            self._state = self._iterator.get_state()
            self._next_index = None

    def _get_next_index(self) -> int:
        with self._lock:
            if self._next_index is None:  # after set_state: ask the parent, rewound
                self._producer.stop()
                self._iterator.set_state(self._state)
                self._next_index = dataset.get_next_index(self._iterator)
            return self._next_index

    def _set_next_index(self, index: int) -> None:
        with self._lock:
            self._producer.stop()
            dataset.set_next_index(self._iterator, index)
            self._next_index = index
            self._state = None

    def close(self) -> None:
        """Stops the thread and closes the parent; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer()
            close = getattr(self._iterator, "close", None)
            if close is not None:
                close()

    def __str__(self) -> str:
        return f"ThreadPrefetchDatasetIterator(prefetch_buffer_size={self._buffer_size})"
