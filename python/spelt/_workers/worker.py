"""The worker process: computes chunks of a MapDataset's elements on request.

Started by launcher.py with ``main([socket_fd, arena_fd, arena_size, payload_fd,
payload_size, worker_index, worker_count, parent_pid])``. The payload (a memfd shared by all
workers of a pool) holds the pickled MapDataset and worker_init_fn. The worker then answers
requests in order (protocol.py) until the consumer closes the socket.

A worker ignores SIGINT (Ctrl-C is the consumer's to handle; it then stops the workers) and
exits by itself when the consumer process ends, however it ends: the socket reaches EOF, and a
watcher thread exits as soon as the parent process is gone (pidfd, else polling getppid()).
"""

from __future__ import annotations

import mmap
import os
import pickle
import select
import signal
import threading
import time
from multiprocessing import connection

from spelt import _core
from spelt._workers import arena as arena_lib
from spelt._workers import protocol

_PARENT_POLL_SECONDS = 0.5


def _exit_with_parent(parent_pid: int) -> None:
  try:
    pidfd = os.pidfd_open(parent_pid)
  except (AttributeError, OSError):
    pidfd = None

  def watch() -> None:
    if pidfd is not None:
      select.select([pidfd], [], [])
    else:
      while os.getppid() == parent_pid:
        time.sleep(_PARENT_POLL_SECONDS)
    os._exit(0)  # pylint: disable=protected-access

  threading.Thread(target=watch, name="spelt-parent-watch", daemon=True).start()
  if os.getppid() != parent_pid:  # the parent ended before the watch began
    os._exit(0)  # pylint: disable=protected-access


def _load_payload(fd: int, size: int) -> tuple:
  """(dataset, worker_init_fn) from the payload memfd (sys.path is already the consumer's)."""
  with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mm:
    dataset_bytes, init_bytes = pickle.loads(mm)
  os.close(fd)
  return pickle.loads(dataset_bytes), pickle.loads(init_bytes)


def _serve(conn: connection.Connection, get, arena, allocator) -> None:
  while True:
    try:
      begin, size, freed = protocol.decode_request(conn.recv_bytes())
    except EOFError:
      return
    for region in freed:
      allocator.free(region)
    start = time.perf_counter()
    writer, error = protocol.ChunkWriter(arena, allocator), None
    for index in range(begin, begin + size):
      try:
        value = get(index)
      except Exception as e:  # pylint: disable=broad-exception-caught
        error = protocol.pack_error(e.with_traceback(e.__traceback__.tb_next))  # user frames
        break
      try:
        writer.add(value)
      except Exception as e:  # pylint: disable=broad-exception-caught
        e.add_note(f"spelt: element {index} cannot be pickled to leave its worker process")
        error = protocol.pack_error(e)
        break
      del value  # its memory serves the next element
    header, payload = writer.finish(error, time.perf_counter() - start)
    conn.send_bytes(header)
    conn.send_bytes(payload)


def main(argv: list[str]) -> int:
  (sock_fd, arena_fd, arena_size, payload_fd, payload_size, index, count,
   parent_pid) = map(int, argv)
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  _exit_with_parent(parent_pid)
  conn = connection.Connection(sock_fd)
  try:
    arena = _core.Arena(arena_fd, arena_size)
    os.close(arena_fd)
    dataset, worker_init_fn = _load_payload(payload_fd, payload_size)
    if worker_init_fn is not None:
      worker_init_fn(index, count)
    get = dataset._node.get  # pylint: disable=protected-access
  except Exception as e:  # pylint: disable=broad-exception-caught
    e.add_note(f"spelt: raised while starting worker process {index} of {count}")
    try:
      conn.send_bytes(protocol.fatal_header(e))
    except (BrokenPipeError, ConnectionResetError):  # the consumer stopped listening
      pass
    return 1
  try:
    _serve(conn, get, arena, arena_lib.RegionAllocator(arena_size))
  except (BrokenPipeError, ConnectionResetError):  # the consumer stopped listening
    pass
  return 0
