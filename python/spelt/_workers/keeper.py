"""The worker pool of one parallel stage, kept warm between its iterators.

A ProcessPrefetchIterDataset's engine node holds a PoolKeeper. Each iterator leases a pool from
it (``acquire()``, called by the engine's process executor when the iterator is created, and
again after a failure or a restart past the end); the lease goes back when the iterator has
handed out its last element, is closed or is garbage collected. The keeper then keeps the pool,
idle, for IDLE_SECONDS, so that the next iterator (the next epoch of a DataLoader, ...) starts
warm, as long as the dataset that owns the keeper (its *anchor*) lives: when it is gone, no new
iterator can come, and a pool handed back is stopped at once. It reuses a pool only for the same pickled pipeline and worker_init_fn (both are pickled
again for every lease: a transform changed in between gets new workers), and only if all its
workers are alive. Workers so keep what a previous iterator left in their memory (like
PyTorch's ``persistent_workers``), and worker_init_fn runs once per pool, not per iterator.

An idle pool stops after IDLE_SECONDS, when the anchor or the keeper is garbage collected, or at
interpreter exit. Two iterators of one dataset at the same time get two pools; the keeper
keeps at most one.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from typing import Any, Callable

from spelt._workers import pickling
from spelt._workers import pool as pool_lib

# How long an idle pool stays up, waiting for the next iterator.
IDLE_SECONDS = 30.0


class _IdleSlot:
    """At most one idle pool, stopped after IDLE_SECONDS (by a timer thread) unless taken."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pool: pool_lib.WorkerPool | None = None
        self._timer: threading.Timer | None = None
        self._retired = False

    def put(self, pool: pool_lib.WorkerPool) -> None:
        """Keeps `pool` idle (stopping the one kept before), or stops it if retired."""
        timer = threading.Timer(IDLE_SECONDS, self._expire, args=(pool,))
        timer.daemon = True
        with self._lock:
            old = self._take_locked()
            if not self._retired:
                self._pool, self._timer = pool, timer
        if old is not None:
            old.close()
        if self._pool is not pool:
            pool.close()
            return
        try:
            timer.start()
        except RuntimeError:  # no new threads at interpreter exit
            self.clear()

    def retire(self) -> None:
        """Stops the idle pool; pools put later are stopped at once."""
        self._retired = True
        self.clear()

    def take(self) -> pool_lib.WorkerPool | None:
        with self._lock:
            return self._take_locked()

    def clear(self) -> None:
        pool = self.take()
        if pool is not None:
            pool.close()

    def _take_locked(self) -> pool_lib.WorkerPool | None:
        pool, self._pool = self._pool, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return pool

    def _expire(self, pool: pool_lib.WorkerPool) -> None:
        with self._lock:
            if self._pool is not pool:
                return
            self._pool = self._timer = None
        pool.close()


class Lease:
    """A pool leased to one iterator (the interface of process_executor.cc): ``submit(begin,
    count, batching)`` -> Ticket; ``close()`` stops a failed pool; dropping the lease hands it back."""

    def __init__(self, slot: _IdleSlot, pool: pool_lib.WorkerPool):
        self._slot = slot
        self._pool = pool

    @property
    def pool(self) -> pool_lib.WorkerPool:
        return self._pool

    def submit(self, begin: int, count: int, batching: tuple | None = None) -> pool_lib.Ticket:
        return self._pool.submit(begin, count, batching)

    def close(self) -> None:
        self._pool.close()

    def __del__(self):
        if not self._pool.closed:
            self._slot.put(self._pool)


class PoolKeeper:
    """Starts and keeps the worker pool of one parallel stage (see module doc).

    `dataset` (a MapDataset) and `worker_init_fn` are what the workers run; `capacity` is the
    number of requests outstanding per worker; `anchor` the object whose life bounds warm reuse;
    `max_workers` how many workers a pool may grow to (WorkerPool.add_worker; default
    `num_workers`).
    """

    def __init__(
        self,
        dataset: Any,
        worker_init_fn: Callable[[int, int], None] | None,
        num_workers: int,
        capacity: int,
        anchor: Any,
        max_workers: int | None = None,
    ):
        self._dataset = dataset
        self._max_workers = max_workers
        self._worker_init_fn = worker_init_fn
        self._num_workers = num_workers
        self._capacity = capacity
        self._idle = _IdleSlot()
        weakref.finalize(anchor, self._idle.retire)
        weakref.finalize(self, self._idle.retire)

    def acquire(self) -> Lease:
        """A lease on a started pool for the current pipeline: the idle one if it runs the same
        pickled pipeline, else a new one. Raises if the pipeline cannot be pickled (naming what)."""
        payload = (
            pickling.dumps(self._dataset, "the pipeline"),
            pickling.dumps(self._worker_init_fn, "worker_init_fn"),
        )
        digest = hashlib.sha1(payload[0], usedforsecurity=False)
        digest.update(payload[1])
        pool = self._idle.take()
        if pool is not None and (pool.digest != digest.digest() or not pool.alive()):
            pool.close()
            pool = None
        if pool is None:
            pool = pool_lib.WorkerPool(
                payload, digest.digest(), self._num_workers, self._capacity, self._max_workers
            )
        return Lease(self._idle, pool)
