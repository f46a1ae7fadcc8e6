"""A pool of worker processes: starting them, talking to them, noticing deaths, stopping them.

Each worker gets a socket, an arena (arena.py) and the shared payload memfd (the pickled
MapDataset and worker_init_fn). The pool moves requests and replies (protocol.py); which
chunks to ask for, and in what order to read them, is the iterator's business (iterator.py).

Failures never hang: waiting for a reply also watches every worker's pidfd (and polls exit
codes every half second), so a worker that dies is reported as a RuntimeError naming it and its
exit status within a second. ``close()`` lets idle workers exit on EOF, SIGKILLs whatever is
still running after a short grace period, and reaps every process; it is idempotent and safe
from a finalizer.
"""

from __future__ import annotations

import os
import pickle
import socket
import time
from multiprocessing import connection
from typing import Any, NamedTuple, NoReturn

from spelt import _core
from spelt._workers import arena as arena_lib
from spelt._workers import launcher
from spelt._workers import protocol

_POLL_SECONDS = 0.5
_CLOSE_GRACE_SECONDS = 0.5


class Reply(NamedTuple):
  """A worker's reply to one request."""
  values: list[Any]  # the elements computed, in index order (None where filtered)
  error: tuple | None  # packed exception of the element after the last value (protocol.py)
  seconds: float  # worker time spent on the chunk
  nbytes: int  # bytes received (pipe and arena)


class WorkerPool:
  """`num_workers` started worker processes running `dataset_bytes` (see module doc)."""

  def __init__(self, dataset_bytes: bytes, init_bytes: bytes, num_workers: int):
    self._workers: list[launcher.WorkerProcess] = []
    self._conns: list[connection.Connection] = []
    self._arenas: list[Any] = []
    self._freed: list[list[int]] = []  # regions to hand back to each worker
    self._closed = False
    payload = pickle.dumps((dataset_bytes, init_bytes), protocol=pickle.HIGHEST_PROTOCOL)
    payload_fd = arena_lib.create_memfd("spelt-pipeline", len(payload))
    try:
      os.pwrite(payload_fd, payload, 0)
      for index in range(num_workers):
        self._start(index, num_workers, payload_fd, len(payload))
    except BaseException:
      self.close()
      raise
    finally:
      os.close(payload_fd)

  def _start(self, index: int, count: int, payload_fd: int, payload_size: int) -> None:
    ours, theirs = socket.socketpair()
    arena_fd = arena_lib.create_memfd(f"spelt-arena-{index}", arena_lib.ARENA_BYTES)
    try:
      self._arenas.append(_core.Arena(arena_fd, arena_lib.ARENA_BYTES))
      self._conns.append(connection.Connection(ours.detach()))
      self._freed.append([])
      args = [theirs.fileno(), arena_fd, arena_lib.ARENA_BYTES, payload_fd, payload_size,
              index, count, os.getpid()]
      self._workers.append(launcher.WorkerProcess(
          [str(a) for a in args], pass_fds=(theirs.fileno(), arena_fd, payload_fd)))
    finally:
      theirs.close()
      os.close(arena_fd)

  @property
  def num_workers(self) -> int:
    return len(self._workers)

  def request(self, worker: int, begin: int, size: int) -> None:
    """Asks `worker` for elements [begin, begin + size), handing back released regions."""
    freed = self._freed[worker] + self._arenas[worker].take_released()
    self._freed[worker] = []
    try:
      self._conns[worker].send_bytes(protocol.encode_request(begin, size, freed))
    except OSError:
      self._raise_connection_lost(worker)

  def receive(self, worker: int) -> Reply:
    """The next reply of `worker`."""
    header, payload = self._receive(worker)
    _, error, seconds = header
    values = protocol.decode_values(header, payload, self._arenas[worker])
    return Reply(values, error, seconds, protocol.payload_bytes(header, payload))

  def discard(self, worker: int) -> None:
    """Reads and drops the next reply of `worker` (a chunk nobody needs any more)."""
    header, _ = self._receive(worker)
    self._freed[worker] += protocol.regions(header)

  def _receive(self, worker: int) -> tuple[tuple, bytes]:
    conn = self._conns[worker]
    self._wait_readable(worker)
    try:
      header = protocol.decode_header(conn.recv_bytes())
      payload = b"" if protocol.is_fatal(header) else conn.recv_bytes()
    except (EOFError, OSError):
      self._raise_connection_lost(worker)
    if protocol.is_fatal(header):
      raise protocol.unpack_error(header[1])
    return header, payload

  def _raise_connection_lost(self, worker: int) -> NoReturn:
    """The connection broke, so the worker is exiting: raises how it ended."""
    self._workers[worker].wait(2 * _POLL_SECONDS)
    self._raise_if_any_died()
    raise RuntimeError(f"spelt: worker process {worker} closed its connection")

  def _wait_readable(self, worker: int) -> None:
    conn = self._conns[worker]
    sentinels = [w.sentinel for w in self._workers if w.sentinel is not None]
    while not conn.poll(0):
      ready = connection.wait([conn, *sentinels], timeout=_POLL_SECONDS)
      if conn in ready:
        return
      self._raise_if_any_died()

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
      header = protocol.decode_header(conn.recv_bytes())
    except Exception:  # pylint: disable=broad-exception-caught
      return
    if protocol.is_fatal(header):
      raise protocol.unpack_error(header[1])

  def close(self) -> None:
    """Stops every worker (EOF, then SIGKILL after a grace period) and reaps them."""
    if self._closed:
      return
    self._closed = True
    for conn in self._conns:
      conn.close()
    deadline = time.monotonic() + _CLOSE_GRACE_SECONDS
    for worker in self._workers:
      worker.wait(deadline - time.monotonic())
      worker.kill()
    self._arenas.clear()  # views handed out keep their own mapping alive
