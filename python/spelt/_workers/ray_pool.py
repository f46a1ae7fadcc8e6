"""Ray actors as the workers of a parallel stage: the keeper, lease and tickets that the engine's
process executor (cpp/python/process_executor.cc) talks to, once per chunk (docs/distributed.md).

The interface is the worker pool's (keeper.py, pool.py): ``RayKeeper.acquire()`` -> lease;
``lease.submit(begin, count, batching)`` -> ticket; ``ticket.take()`` -> (``_core.UnpackedChunk``, error,
seconds, nbytes); ``lease.close()`` after a failure; an untaken ticket dropped abandons its chunk.
The merge in index order, the state and everything downstream stay in the engine's ordered core,
so the output and the state are those of the pipeline without workers.

* An actor (``ChunkActor``) computes a chunk with the engine (``MapDataset.compute_chunk``, the
  computation a worker process runs) on its own copy of the pipeline: the pickled pipeline is put into Ray's
  object store once per lease and loaded by each actor once (kept by digest, so actors shared
  by several pipelines, e.g. one per trainer, hold each). The elements come back through the
  object store, pickled by Ray (protocol 5: numpy arrays out of band, read back as zero-copy,
  read-only views of the store), and enter the engine without conversion.
* Chunks go to the live actor with the fewest chunks submitted and not taken.
* ``take()`` waits at most ``RayOptions.timeout_s`` (then raises TimeoutError naming the chunk
  and actor). If the actor died (``ray.kill``, its node lost), the chunk is submitted again to
  another live actor (at most ``max_chunk_retries`` times), and a new actor takes the dead one's
  place. Chunks are pure functions of their indices, so nothing is lost or duplicated.
* Named actors (``RayOptions.actor_name``) are detached and looked up by name: a restarted
  trainer, or several trainers, use the same ones. Unnamed actors belong to the keeper and end
  with it (Ray ends an actor when its last handle goes away).
"""

from __future__ import annotations

import collections
import hashlib
import os
import time
import weakref
from typing import Any

import ray
from ray import exceptions as ray_exceptions

from spelt import _core
from spelt._workers import pickling
from spelt._workers import protocol

# How many pipelines an actor keeps loaded (several trainers sharing actors each have one).
_PIPELINES_PER_ACTOR = 8
# An actor is a Ray task away; chunks aim at this much of its time, so that the per-chunk cost
# (about a millisecond of CPU on the consumer, the raylet and the actor) stays small.
TARGET_CHUNK_SECONDS = 0.05
# Ray's errors that mean a chunk's actor is gone or unreachable, or its result lost with a node:
# the chunk is computed elsewhere.
_ACTOR_LOST = (
    ray_exceptions.RayActorError,
    ray_exceptions.ActorUnavailableError,
    ray_exceptions.ObjectLostError,
)


def _nbytes(value: Any) -> int:
    """Bytes of the arrays and strings in one element (containers walked), for chunk sizing."""
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, (str, bytes)):
        return len(value)
    return int(getattr(value, "nbytes", 8))


class ChunkActor:
    """Computes chunks of the pipelines it is given (a Ray actor class: ``ray.remote`` of it).

    Thread-safety: Ray runs one method at a time (max_concurrency 1).
    """

    def __init__(self):
        self._pipelines: collections.OrderedDict[bytes, Any] = collections.OrderedDict()

    def location(self) -> tuple[str, int]:
        """(Ray node id, process id) of the actor."""
        return ray.get_runtime_context().get_node_id(), os.getpid()

    def compute(
        self,
        pipeline: list[Any],
        digest: bytes,
        begin: int,
        count: int,
        batching: tuple | None,
    ) -> tuple:
        """(values, packed error, seconds, nbytes) of elements [begin, begin + count) of the
        pipeline whose pickle is the ObjectRef ``pipeline[0]`` (in a list, so that Ray does not
        fetch it for every call), or of its batches (protocol.chunk_node). values: as
        MapDataset.compute_chunk, None where filtered."""
        start = time.perf_counter()
        node = self._pipelines.get(digest)
        if node is None:
            try:
                node = protocol.decode(ray.get(pipeline[0])).engine_node
            except Exception as e:
                e.add_note(
                    "spelt: raised while loading the pipeline in a Ray actor (are the modules"
                    " it uses importable there? See RayOptions.runtime_env)"
                )
                raise
            self._pipelines[digest] = node
            while len(self._pipelines) > _PIPELINES_PER_ACTOR:
                self._pipelines.popitem(last=False)
        self._pipelines.move_to_end(digest)
        values, error = protocol.chunk_node(node, batching).compute_chunk(begin, count)
        first = next((v for v in values if v is not None), None)
        nbytes = _nbytes(first) * len(values) if first is not None else 0
        packed = None if error is None else protocol.pack_error(error)
        return values, packed, time.perf_counter() - start, nbytes


def connect(options: Any) -> None:
    """Connects this process to Ray (``ray.init(address=..., namespace=...)``) unless it is."""
    if not ray.is_initialized():
        ray.init(address=options.address, namespace=options.namespace)


class _Ticket:
    """A submitted chunk. ``take()`` once; dropping it untaken abandons the chunk. No
    ``__del__``: the engine drops a ticket on the consumer's thread after each chunk, and a
    SIGINT handler run inside a finalizer raises a KeyboardInterrupt that CPython prints and
    drops, so Ctrl-C would be lost. Its actor sees the abandonment through a weak reference
    (``_Actor.in_flight``), and Ray frees the result with the ticket's ObjectRef."""

    def __init__(self, pool: RayPool, begin: int, count: int, batching: tuple | None):
        self._pool = pool
        self.begin, self.count, self.batching = begin, count, batching
        self.actor: _Actor | None = None  # computing it
        self.ref: Any = None  # its result
        self.taken = False

    def take(self) -> tuple[Any, BaseException | None, float, int]:
        if self.taken:
            raise ValueError("Ticket.take: already taken")
        self.taken = True
        return self._pool.take(self)


class _Actor:
    """One actor of a pool: its handle, whether it has started (its first call, ``location()``,
    has returned) and its chunks submitted, neither taken nor abandoned."""

    def __init__(self, index: int, handle: Any):
        self.index = index
        self.handle = handle
        self.started = handle.location.remote()  # an ObjectRef until it is ready, then True
        self.tickets: list[weakref.ref] = []  # of its chunks submitted and not released

    @property
    def in_flight(self) -> int:
        """Its chunks submitted, neither taken nor abandoned (their tickets dropped)."""
        self.tickets = [t for t in self.tickets if t() is not None]
        return len(self.tickets)

    def forget(self, ticket: _Ticket) -> None:
        self.tickets = [t for t in self.tickets if t() is not None and t() is not ticket]


class RayPool:
    """`options.num_actors` actors computing chunks of one pickled pipeline (see module doc).

    Not thread-safe: one lease at a time uses it.
    """

    def __init__(self, options: Any, payload: bytes, digest: bytes):
        self.digest = digest
        self._options = options
        self._payload = [ray.put(payload)]
        self._actor_class = ray.remote(ChunkActor)
        self._actors = [_Actor(i, self._start(i, reattach=True)) for i in range(options.num_actors)]
        self._closed = False

    def _start(self, index: int, reattach: bool) -> Any:
        """Actor `index`: a new one, or, if named and `reattach`, the running one of that name."""
        o = self._options
        actor_options: dict[str, Any] = {
            "num_cpus": o.num_cpus_per_actor,
            "scheduling_strategy": o.scheduling_strategy,
            "max_concurrency": 1,
        }
        if o.resources_per_actor:
            actor_options["resources"] = dict(o.resources_per_actor)
        if o.runtime_env is not None:
            actor_options["runtime_env"] = o.runtime_env
        if o.actor_name is not None:
            name = f"{o.actor_name}-{index}"
            if reattach:
                try:
                    return ray.get_actor(name, namespace=o.namespace)
                except ValueError:  # none of that name: start it
                    pass
            actor_options.update(
                name=name, namespace=o.namespace, lifetime="detached", get_if_exists=True
            )
        return self._actor_class.options(**actor_options).remote()

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, begin: int, count: int, batching: tuple | None = None) -> _Ticket:
        self._check_open()
        ticket = _Ticket(self, begin, count, batching)
        self._send(ticket, None, time.monotonic() + self._options.timeout_s)
        return ticket

    def _send(self, ticket: _Ticket, lost: _Actor | None, deadline: float) -> None:
        """Submits the ticket's chunk to the started actor with the fewest chunks in flight
        (other than `lost` if there is one), waiting until `deadline` for one to start: chunks
        never wait behind an actor that Ray cannot place (short of resources)."""
        while True:
            pending = [a.started for a in self._actors if a.started is not True]
            ready, _ = (
                ray.wait(pending, num_returns=len(pending), timeout=0) if pending else ([], 0)
            )
            for a in self._actors:
                if a.started is not True and a.started in ready:
                    a.started = True
            started = [a for a in self._actors if a.started is True]
            candidates = [a for a in started if a is not lost] or started
            if candidates:
                break
            if not ray.wait(pending, timeout=max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError(
                    f"spelt: no Ray actor started within RayOptions.timeout_s ="
                    f" {self._options.timeout_s} s (does the cluster have the resources they"
                    f" ask for: num_cpus={self._options.num_cpus_per_actor},"
                    f" resources={self._options.resources_per_actor}?)"
                )
        actor = min(candidates, key=lambda a: a.in_flight)
        ticket.actor = actor
        ticket.ref = actor.handle.compute.remote(
            self._payload, self.digest, ticket.begin, ticket.count, ticket.batching
        )
        actor.tickets.append(weakref.ref(ticket))

    def release(self, ticket: _Ticket) -> None:
        """The ticket's chunk will not be taken (again): its actor has room for another."""
        if ticket.actor is not None:
            ticket.actor.forget(ticket)
        ticket.ref = ticket.actor = None  # Ray frees the result with the last reference

    def take(self, ticket: _Ticket) -> tuple[Any, BaseException | None, float, int]:
        """(elements, error, seconds, nbytes) of the chunk: a ``_core.UnpackedChunk`` of the
        elements from ticket.begin on, all of them unless `error`, the exception of the element
        after them; the actor's seconds and the chunk's bytes. Waits at most options.timeout_s;
        recomputes the chunk elsewhere if its actor is lost (see module doc)."""
        self._check_open()
        deadline = time.monotonic() + self._options.timeout_s
        retries = 0
        try:
            while True:
                ready, _ = ray.wait([ticket.ref], timeout=max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise TimeoutError(
                        f"spelt: chunk [{ticket.begin}, {ticket.begin + ticket.count}) was not"
                        f" computed by Ray actor {ticket.actor.index} within"
                        f" RayOptions.timeout_s = {self._options.timeout_s} s. The iterator's"
                        " position is intact: next() tries again."
                    )
                try:
                    values, packed, seconds, nbytes = ray.get(ticket.ref)
                    break
                except _ACTOR_LOST as lost_error:
                    retries += 1
                    if retries > self._options.max_chunk_retries:
                        raise RuntimeError(
                            f"spelt: chunk [{ticket.begin}, {ticket.begin + ticket.count}) was"
                            f" lost with its Ray actor {retries} times in a row; giving up"
                        ) from lost_error
                    lost = ticket.actor
                    self._replace(lost)
                    self.release(ticket)
                    self._send(ticket, lost, deadline)
            index = ticket.actor.index
        finally:
            self.release(ticket)
        error = None
        if packed is not None:
            error = protocol.unpack_error(
                packed,
                f"spelt: raised in Ray actor {index} while computing element"
                f" {ticket.begin + len(values)} of the MapDataset",
            )
        return _core.UnpackedChunk(values), error, seconds, nbytes

    def _replace(self, lost: _Actor) -> None:
        """Starts a new actor in the place of `lost` (with its name), unless done already."""
        if self._actors[lost.index] is lost:
            self._actors[lost.index] = _Actor(lost.index, self._start(lost.index, reattach=False))

    def close(self) -> None:
        """Forgets the actors: unnamed ones end with their last handle; named ones (maybe shared
        with other trainers) keep running. Idempotent."""
        self._closed = True
        self._actors.clear()
        self._payload.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("spelt: the Ray actor pool is closed")


class _Lease:
    """The keeper's pool leased to one iterator (the interface of process_executor.cc)."""

    def __init__(self, keeper: RayKeeper, pool: RayPool):
        self._keeper = keeper
        self._pool = pool

    def submit(self, begin: int, count: int, batching: tuple | None = None) -> _Ticket:
        return self._pool.submit(begin, count, batching)

    def close(self) -> None:
        self._pool.close()

    def __del__(self):
        if not self._pool.closed:
            self._keeper.put(self._pool)


class RayKeeper:
    """The actors of one Ray stage (RayPrefetchIterDataset), leased to its iterators and kept
    between them (as long as the keeper lives: the next epoch or a restore starts warm).

    `dataset` is the MapDataset the actors compute; `options` a spelt.ray.RayOptions.
    """

    def __init__(self, dataset: Any, options: Any):
        self._dataset = dataset
        self._options = options
        self._idle: RayPool | None = None

    def acquire(self) -> _Lease:
        """A lease on actors computing the current pipeline (raises now if it cannot be pickled,
        naming what). Connects to Ray first if this process is not connected."""
        payload = pickling.dumps(self._dataset, "the pipeline")
        digest = hashlib.sha1(payload, usedforsecurity=False).digest()
        connect(self._options)
        pool, self._idle = self._idle, None
        if pool is None or pool.digest != digest:
            pool = RayPool(self._options, payload, digest)
        return _Lease(self, pool)

    def put(self, pool: RayPool) -> None:
        """Keeps a pool handed back (at most one: an iterator at a time is the common case)."""
        if self._idle is not None:
            self._idle.close()
        self._idle = pool
