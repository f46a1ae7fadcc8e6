"""The consumer's iterator over a MapDataset computed by worker processes.

It hands out chunks of consecutive indices round-robin to the workers (up to
``chunks_per_worker`` in flight each) and takes the replies strictly in index order, so the
elements, and everything downstream of them, are those of the same pipeline read in one process.
State is Grain's ``{"next_index": n}`` (indices consumed up to and including the last element
returned), a global position: it restores with any number of workers, and restoring only tells
the workers where to start (chunks already requested are dropped as they arrive).
The workers stop when the iterator is exhausted, closed or garbage collected, and at
interpreter exit.

Chunk sizes adapt (chunk_sizer.py): small at first for a fast first element, then sized to about
10 ms of a worker's time. An exception in element i is raised when the consumer reaches i, after
every element before it; the next call continues with element i + 1. When the pool fails (a
worker died, Ctrl-C interrupted a wait, ...), it is shut down and the next call starts a new one
at the current position; nothing is lost or repeated.
"""

from __future__ import annotations

import collections
import dataclasses
import operator
import weakref
from typing import Any, Callable

from spelt import dataset
from spelt._workers import chunk_sizer
from spelt._workers import pool as pool_lib
from spelt._workers import protocol

_NAME = "ProcessPrefetchIterDataset"


@dataclasses.dataclass(eq=False)
class _Chunk:
  begin: int
  size: int
  worker: int


class ProcessPrefetchIterator(dataset._Unpicklable, dataset.DatasetIterator):  # pylint: disable=protected-access
  """Elements of a MapDataset, computed by a WorkerPool, in index order (see module doc)."""

  def __init__(
      self,
      start_pool: Callable[[], pool_lib.WorkerPool],
      length: int,
      allow_nones: bool,
      chunks_per_worker: int,
  ):
    super().__init__()
    self._start_pool = start_pool
    self._length = length
    self._allow_nones = allow_nones
    self._chunks_per_worker = chunks_per_worker
    self._sizer = chunk_sizer.ChunkSizer()
    self._closed = False
    self._pool: pool_lib.WorkerPool | None = None
    self._stop_pool: weakref.finalize | None = None
    self._outstanding: list[collections.deque[_Chunk]] = []  # per worker, request order
    self._in_flight: collections.deque[_Chunk] = collections.deque()  # not stale, index order
    self._cursor = 0  # worker of the next request
    self._next_index = 0
    self._submit_index = 0
    self._values: list[Any] = []  # the chunk being consumed, which begins at _values_begin
    self._values_begin = 0
    self._position = 0  # in _values
    self._error: BaseException | None = None  # raised after the last of _values
    self._ensure_pool()  # processes start now; work is requested on first use

  def __next__(self) -> Any:
    if self._closed:
      raise ValueError("next() on a closed iterator")
    while True:
      if self._position < len(self._values):
        value = self._values[self._position]
        self._position += 1
        self._next_index = self._values_begin + self._position
        if value is None and not self._allow_nones:
          continue
        return value
      if self._error is not None:
        error = self._error
        self._next_index = self._values_begin + self._position + 1  # step past it
        self._restart()
        raise error
      if self._next_index >= self._length:
        self._stop()  # nothing left to compute; set_state() to an earlier position restarts
        raise StopIteration
      self._guarded(self._take_next_chunk)

  def get_state(self) -> dict[str, Any]:
    return {"next_index": self._next_index}

  def set_state(self, state: dict[str, Any]) -> None:
    if not isinstance(state, dict):
      raise ValueError(f"state must be a dict, got {type(state).__name__}")
    n = state.get("next_index")
    if isinstance(n, bool) or not hasattr(type(n), "__index__"):
      raise ValueError(f"{_NAME}: state field 'next_index' missing or not an int: {state!r}")
    n = operator.index(n)
    if n < 0 or n > self._length:
      raise ValueError(f"{_NAME}: next_index {n} out of range [0, {self._length}]")
    self._next_index = n
    self._restart()

  def start_prefetch(self) -> None:
    if not self._closed:
      self._guarded(self._refill)

  def close(self) -> None:
    if not self._closed:
      self._closed = True
      self._stop()

  # Scheduling.
  def _restart(self) -> None:
    """Continues from _next_index: drops the current chunk and what is in flight (the
    replies to chunks no longer in _in_flight are discarded as they arrive)."""
    self._in_flight.clear()
    self._values, self._values_begin, self._position = [], self._next_index, 0
    self._error = None
    self._submit_index = self._next_index

  def _refill(self) -> None:
    if self._submit_index >= self._length:
      return
    pool = self._ensure_pool()
    limit = pool.num_workers * self._chunks_per_worker
    while len(self._in_flight) < limit and self._submit_index < self._length:
      size = min(self._sizer.next_size(), self._length - self._submit_index)
      chunk = _Chunk(self._submit_index, size, self._cursor)
      pool.request(chunk.worker, chunk.begin, chunk.size)
      self._outstanding[chunk.worker].append(chunk)
      self._in_flight.append(chunk)
      self._submit_index += size
      self._cursor = (self._cursor + 1) % pool.num_workers

  def _take_next_chunk(self) -> None:
    self._refill()
    chunk = self._in_flight.popleft()
    self._refill()  # keep every worker busy while this chunk is consumed
    outstanding = self._outstanding[chunk.worker]
    while outstanding.popleft() is not chunk:  # replies come in request order
      self._pool.discard(chunk.worker)
    reply = self._pool.receive(chunk.worker)
    self._sizer.observe(len(reply.values), reply.seconds, reply.nbytes)
    self._values, self._values_begin, self._position = reply.values, chunk.begin, 0
    if reply.error is not None:
      self._error = protocol.unpack_error(
          reply.error,
          f"spelt: raised in worker process {chunk.worker} while computing element"
          f" {chunk.begin + len(reply.values)} of the MapDataset",
      )

  # The pool.
  def _ensure_pool(self) -> pool_lib.WorkerPool:
    if self._pool is None:
      pool = self._start_pool()
      self._pool = pool
      self._stop_pool = weakref.finalize(self, pool.close)  # on GC and at interpreter exit
      self._outstanding = [collections.deque() for _ in range(pool.num_workers)]
      self._cursor = 0
    return self._pool

  def _stop(self) -> None:
    if self._stop_pool is not None:
      self._stop_pool()
    self._pool = self._stop_pool = None
    self._in_flight.clear()
    self._outstanding = []

  def _guarded(self, step: Callable[[], None]) -> None:
    """Runs a step that talks to the pool; if it fails, the pool is stopped (the next call
    starts a new one at _next_index) and the error propagates."""
    try:
      step()
    except BaseException:
      self._stop()
      self._restart()
      raise
