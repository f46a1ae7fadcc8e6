"""A pool of worker processes: starting them, handing out chunks, noticing deaths, stopping them.

The engine's process executor (cpp/python/process_executor.cc) drives a pool through a lease
(keeper.py): ``submit(begin, count)`` returns a Ticket, ``Ticket.take()`` the chunk's elements.
Chunks are sent in submission order, each to the ready worker with the fewest requests
outstanding (at most ``capacity`` each, counting its replies received but not taken yet: one
being computed and the rest ready, so ``capacity`` bounds the arena memory a worker's chunks
hold), so the first chunks go to whichever worker has started first. A worker answers its requests in order, so the
pool knows which chunk each reply is for; replies are read as they come and kept until taken.
A chunk abandoned (its Ticket dropped untaken) is dropped when its reply arrives, or by the
pool's next submit or take if the reply was already in; the arena regions of dropped or consumed
replies go back to their worker with its next request. The pool sees abandonment through a weak
reference, not in a ``Ticket.__del__``: the engine drops a ticket on the consumer's thread after
each chunk, and a SIGINT handler that runs inside a finalizer raises a KeyboardInterrupt that
CPython only prints ("Exception ignored in ...") and drops, so Ctrl-C was lost and the consumer
read on.

Each worker gets a socket, an arena (arena.py), the shared payload memfd (the pickled MapDataset
and worker_init_fn) and the start gate (bootstrap.py). Failures never hang: waiting for a reply
also watches every worker's pidfd (and polls exit codes every half second), so a worker that
dies is reported as a RuntimeError naming it and its exit status within a second. ``close()``
lets idle workers exit on EOF, SIGKILLs whatever is still running after a short grace period,
and reaps every process; it is idempotent, and also runs when the pool is garbage collected
and at interpreter exit.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import socket
import time
import weakref
from multiprocessing import connection
from typing import Any, NoReturn

from spelt import _core
from spelt import _tree
from spelt._workers import arena as arena_lib
from spelt._workers import launcher
from spelt._workers import protocol

_POLL_SECONDS = 0.5
# How long a worker whose connection broke may take to exit before the consumer reports the
# broken connection instead of its exit status: interpreter shutdown (atexit hooks, the
# engine's exit grace of up to 2 s, cpp/python/gil.h) can take seconds on a loaded machine. The
# wait ends as soon as the worker exits.
_EXIT_WAIT_SECONDS = 10.0
_CLOSE_GRACE_SECONDS = 0.5


@dataclasses.dataclass(eq=False)
class _Chunk:
    begin: int
    count: int
    batching: tuple | None  # see protocol.chunk_node
    ticket: weakref.ref = dataclasses.field(init=False)  # to its Ticket
    worker: int = -1  # -1 while not sent
    reply: tuple | None = None  # (record, error, seconds, nbytes) once received

    @property
    def abandoned(self) -> bool:
        """Its Ticket is gone (a chunk being taken has a live Ticket)."""
        return self.ticket() is None


class Ticket:
    """A submitted chunk. ``take()`` once; dropping it untaken abandons the chunk. No
    ``__del__``: dropping a Ticket runs no Python code (see module doc)."""

    def __init__(self, pool: WorkerPool, chunk: _Chunk):
        self._pool = pool
        self._chunk: _Chunk | None = chunk
        chunk.ticket = weakref.ref(self)

    def take(self) -> tuple[Any, BaseException | None, float, int]:
        """(elements, error, seconds, nbytes) of the chunk (see WorkerPool.take)."""
        chunk, self._chunk = self._chunk, None
        if chunk is None:
            raise ValueError("Ticket.take: already taken")
        return self._pool.take(chunk)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _write_all(fd: int, data: bytes, offset: int) -> None:
    """pwrite of all of `data` (one call writes at most ~2 GiB)."""
    with memoryview(data) as view:
        while view:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written


def _shutdown(
    conns: list[connection.Connection],
    workers: list[launcher.WorkerProcess],
    fds: list[int],
    owner_pid: int,
) -> None:
    """Stops every worker (EOF, then SIGKILL after a grace period) and reaps them. In a forked
    copy of the consumer, only closes its copies of the sockets: the workers are not its own.
    Closes `fds` (what starting more workers needs)."""
    for conn in conns:
        conn.close()
    while fds:
        os.close(fds.pop())
    if os.getpid() != owner_pid:
        return
    deadline = time.monotonic() + _CLOSE_GRACE_SECONDS
    for worker in workers:
        worker.wait(deadline - time.monotonic())
        worker.kill()


class WorkerPool:
    """`num_workers` worker processes running `payload`: the pickled MapDataset and the pickled
    worker_init_fn (see module doc).

    `digest` identifies the payload (the keeper reuses a pool only for the same one).
    `max_workers` (default `num_workers`) is how many ``add_worker()`` may reach, and the
    worker count that worker_init_fn is given. Chunks go only to the first ``active_workers``
    workers, at most ``capacity`` each; both may change at any time (the autotuner,
    autotune.py, sets them): that changes which worker computes a chunk, never its elements.
    Not thread-safe: one lease at a time uses it.
    """

    def __init__(
        self,
        payload: tuple[bytes, bytes],
        digest: bytes,
        num_workers: int,
        capacity: int,
        max_workers: int | None = None,
    ):
        self.digest = digest
        self.capacity = capacity
        self.max_workers = max(num_workers, max_workers or 0)
        self._workers: list[launcher.WorkerProcess] = []
        self._conns: list[connection.Connection] = []
        self._arenas: list[Any] = []
        self._ready: list[bool] = []
        self._sent: list[collections.deque[_Chunk]] = []  # per worker, request order
        self._held: list[int] = []  # per worker, replies received and not taken
        self._received: list[_Chunk] = []  # those replies' chunks
        self._queue: collections.deque[_Chunk] = collections.deque()  # not sent yet
        self._closed = False
        self._fds: list[int] = []  # the payload and gate, kept while the pool may grow
        self._close = weakref.finalize(
            self, _shutdown, self._conns, self._workers, self._fds, os.getpid()
        )
        dataset_bytes, init_bytes = payload
        try:
            payload_fd = arena_lib.create_memfd(
                "spelt-pipeline", len(dataset_bytes) + len(init_bytes)
            )
            self._fds.append(payload_fd)
            gate_read, gate_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            self._fds += [gate_read, gate_write]
            os.write(gate_write, b"x" * min(num_workers, usable_cpus()))
            _write_all(payload_fd, dataset_bytes, 0)
            _write_all(payload_fd, init_bytes, len(dataset_bytes))
            self._payload = (payload_fd, len(dataset_bytes), len(init_bytes))
            self._gate = (gate_read, gate_write)
            for _ in range(num_workers):
                self.add_worker()
        except BaseException:
            self.close()
            raise
        if self.max_workers == num_workers:  # cannot grow: the fds are no longer needed
            while self._fds:
                os.close(self._fds.pop())
        self.active_workers = num_workers

    def add_worker(self) -> None:
        """Starts one more worker (index ``num_workers``) and makes it active once ready.
        REQUIRES: ``num_workers < max_workers``."""
        self._check_open()
        index = len(self._workers)
        if index >= self.max_workers:
            raise ValueError(f"WorkerPool.add_worker: already {index} of {self.max_workers}")
        self._start(index, self.max_workers, self._payload, self._gate)
        self.active_workers = len(self._workers)

    def _start(
        self, index: int, count: int, payload: tuple[int, int, int], gate: tuple[int, int]
    ) -> None:
        ours, theirs = socket.socketpair()
        arena_fd = arena_lib.create_memfd(f"spelt-arena-{index}", arena_lib.ARENA_BYTES)
        try:
            self._arenas.append(_core.Arena(arena_fd, arena_lib.ARENA_BYTES))
            self._conns.append(connection.Connection(ours.detach()))
            self._ready.append(False)
            self._sent.append(collections.deque())
            self._held.append(0)
            args = [
                theirs.fileno(),
                arena_fd,
                arena_lib.ARENA_BYTES,
                *payload,
                index,
                count,
                int(_tree.uses_jax()),  # the workers build trees as this process does
                os.getpid(),
                *gate,
            ]
            self._workers.append(
                launcher.WorkerProcess(
                    [str(a) for a in args], pass_fds=(theirs.fileno(), arena_fd, payload[0], *gate)
                )
            )
        finally:
            theirs.close()
            os.close(arena_fd)

    @property
    def num_workers(self) -> int:
        """Workers started (active or not)."""
        return len(self._workers)

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self._workers]

    def all_ready(self) -> bool:
        """True once every active worker has started."""
        return all(self._ready[: self.active_workers])

    @property
    def closed(self) -> bool:
        return self._closed

    def alive(self) -> bool:
        """True if no worker has exited (a pool kept idle is checked before reuse)."""
        return not self._closed and all(w.exitcode is None for w in self._workers)

    def submit(self, begin: int, count: int, batching: tuple | None = None) -> Ticket:
        """Queues elements [begin, begin + count) (of the batches `batching` names, see
        protocol.chunk_node) and sends what the workers can take now."""
        self._check_open()
        chunk = _Chunk(begin, count, batching)
        ticket = Ticket(self, chunk)
        self._queue.append(chunk)
        self._receive_ready(timeout=0)
        self._dispatch()
        return ticket

    def take(self, chunk: _Chunk) -> tuple[Any, BaseException | None, float, int]:
        """(elements, error, seconds, nbytes): the elements computed from chunk.begin on, in index
        order (a ``_core.UnpackedChunk``: engine values, arrays in the worker's arena), all of them
        unless `error`, the exception of the element after them; the worker's seconds and the
        chunk's bytes. Blocks until the reply is in; raises if a worker died or could not start."""
        self._check_open()
        while chunk.reply is None:
            self._dispatch()
            if not self._receive_ready(timeout=_POLL_SECONDS):
                raise RuntimeError(f"spelt: chunk at {chunk.begin} is neither sent nor queued")
        record, error, seconds, nbytes = chunk.reply
        self._received.remove(chunk)
        self._held[chunk.worker] -= 1
        elements = self._arenas[chunk.worker].unpack(record)
        where = chunk.begin + len(elements)
        if elements.error is not None:  # comes first: the worker's error is for a later element
            error = elements.error
            error.add_note(
                f"spelt: element {where}, computed by worker process {chunk.worker},"
                " cannot be unpickled in this process"
            )
        elif error is not None:
            error = protocol.unpack_error(
                error,
                f"spelt: raised in worker process {chunk.worker} while computing element"
                f" {where} of the MapDataset",
            )
        return elements, error, seconds, nbytes

    def close(self) -> None:
        """Stops every worker and reaps them (see module doc). Idempotent."""
        self._closed = True
        self._close()
        self._arenas.clear()  # views handed out keep their own mapping alive

    # Sending and receiving.
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("spelt: the worker pool is closed")

    def _drop_abandoned(self) -> None:
        """Drops the replies received for chunks abandoned since (their workers get the room
        back)."""
        for chunk in [c for c in self._received if c.abandoned]:
            self._received.remove(chunk)
            self._arenas[chunk.worker].discard(chunk.reply[0])
            self._held[chunk.worker] -= 1

    def _dispatch(self) -> None:
        """Sends queued chunks, in order, to the ready workers with room."""
        self._drop_abandoned()
        while self._queue:
            if self._queue[0].abandoned:
                self._queue.popleft()
                continue
            room = [
                (len(sent), w)
                for w, sent in enumerate(self._sent[: self.active_workers])
                if self._ready[w] and len(sent) + self._held[w] < self.capacity
            ]
            if not room:
                return
            _, worker = min(room)
            chunk = self._queue.popleft()
            freed = self._arenas[worker].take_released()
            try:
                self._conns[worker].send_bytes(
                    protocol.encode((chunk.begin, chunk.count, chunk.batching, freed))
                )
            except OSError:
                self._raise_connection_lost(worker)
            chunk.worker = worker
            self._sent[worker].append(chunk)

    def _receive_ready(self, timeout: float) -> bool:
        """Reads the messages that arrive within `timeout` seconds (from workers that are starting
        or have requests outstanding); raises if a worker has died. False if no message is
        expected."""
        expecting = [
            conn
            for conn, ready, sent in zip(self._conns, self._ready, self._sent)
            if not ready or sent
        ]
        if not expecting:
            return False
        sentinels = [w.sentinel for w in self._workers if w.sentinel is not None]
        readable = connection.wait([*expecting, *sentinels], timeout)
        received = False
        for worker, conn in enumerate(self._conns):
            if conn in readable:
                self._receive(worker)
                received = True
        if not received and (readable or timeout > 0):
            self._raise_if_any_died()
        return True

    def _receive(self, worker: int) -> None:
        try:
            message = protocol.decode(self._conns[worker].recv_bytes())
        except (EOFError, OSError):
            self._raise_connection_lost(worker)
        if message[0] == protocol.READY:
            self._ready[worker] = True
        elif message[0] == protocol.FATAL:
            raise protocol.unpack_error(message[1])
        else:
            chunk = self._sent[worker].popleft()
            if chunk.abandoned:
                self._arenas[worker].discard(message[1])
            else:
                chunk.reply = message[1:]
                self._received.append(chunk)
                self._held[worker] += 1

    # Failures.
    def _raise_connection_lost(self, worker: int) -> NoReturn:
        """The connection broke, so the worker is exiting: raises how it ended."""
        self._workers[worker].wait(_EXIT_WAIT_SECONDS)
        self._raise_if_any_died()
        raise RuntimeError(f"spelt: worker process {worker} closed its connection")

    def _raise_if_any_died(self) -> None:
        for index, worker in enumerate(self._workers):
            if worker.exitcode is None:
                continue
            self._raise_if_fatal(index)
            raise RuntimeError(
                f"spelt: worker process {index} of {len(self._workers)} (pid {worker.pid})"
                f" {worker.describe_exit()} while the pipeline was running. The iterator's"
                " position is intact: next() starts new workers there."
            )

    def _raise_if_fatal(self, worker: int) -> None:
        """Raises the startup error of an exited worker, if it sent one (its first message)."""
        conn = self._conns[worker]
        try:
            if not conn.poll(0):
                return
            message = protocol.decode(conn.recv_bytes())
        except Exception:  # pylint: disable=broad-exception-caught
            return
        if message[0] == protocol.FATAL:
            raise protocol.unpack_error(message[1])
