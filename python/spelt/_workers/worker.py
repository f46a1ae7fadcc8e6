"""The worker process: computes chunks of a MapDataset's elements on request.

bootstrap.py runs ``main([socket_fd, arena_fd, arena_size, payload_fd, dataset_size,
init_size, worker_index, worker_count, uses_jax, parent_pid, gate_read_fd, gate_write_fd],
release_gate)``; ``uses_jax`` is the consumer's spelt._tree.uses_jax() (0 or 1): with 0, the
worker uses plain trees as the consumer does even if it could import jax, so that it stacks
batches and converts elements as the consumer would. The payload (a memfd shared by all workers of a pool) holds the pickled
MapDataset (dataset_size bytes), then the pickled worker_init_fn (init_size bytes). Once they are loaded and worker_init_fn has run, the worker releases its start
gate, says it is ready, and answers requests in order (protocol.py) until the consumer closes
the socket. A chunk is computed and stored into the arena by the engine in one call
(``MapDataset.compute_chunk_into`` with the arena's ``_core.ChunkWriter``: one call per request,
or per piece of about 1 MiB when elements are large): elements with a tagged form are encoded
from the engine's values and never become Python objects; the others are pickled.

A worker exits by itself when the consumer process ends, however it ends: the socket reaches
EOF, and a watcher thread exits as soon as the parent process is gone (pidfd, else polling
getppid()).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import select
import threading
import time
from multiprocessing import connection
from typing import Any, Callable

from spelt import _core
from spelt import _tree
from spelt._workers import protocol

_PARENT_POLL_SECONDS = 0.5
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters
# Elements are computed and stored (one MapDataset.compute_chunk_into call) about this many
# bytes at a time: 1 MiB records stored one by one cost a worker 25% less than 8 at once.
_PIECE_BYTES = 1 << 20


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


def _keep_freed_memory() -> None:
    """Makes glibc serve allocations below 32 MiB from the heap and keep up to 128 MiB of freed
    heap, instead of mapping and unmapping them each time.

    A worker holds a chunk's elements (up to 8 MiB) at once and frees them together; by default
    glibc then unmaps or trims that memory, and the next chunk faults every page in again (with
    1 MiB elements: 256 page faults per MiB, a worker 6x slower).
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 128 << 20)


def _load_payload(fd: int, dataset_size: int, init_size: int) -> tuple:
    """(dataset, worker_init_fn) from the payload memfd (sys.path is already the consumer's)."""
    with mmap.mmap(fd, dataset_size + init_size, prot=mmap.PROT_READ) as mm:
        with memoryview(mm) as view:
            loaded = pickle.loads(view[:dataset_size]), pickle.loads(view[dataset_size:])
    os.close(fd)
    return loaded


def _compute(node: Any, arena: Any, begin: int, count: int, piece: int) -> tuple:
    """(record, error, nbytes) of elements [begin, begin + count), computed `piece` at a time and
    stored as they come, so that large arrays are copied into the arena while still in cache.
    `error` is the exception of the element after those in the record, or None."""
    writer = arena.writer()
    for first in range(begin, begin + count, piece):
        # One call computes the piece and stores it (elements with a tagged form never become
        # Python objects); a pickling error comes first, the compute error being for a later
        # element.
        stored, error, pickle_failed = node.compute_chunk_into(
            writer, first, min(piece, begin + count - first), protocol.pickle_element
        )
        if pickle_failed:
            error.add_note(
                f"spelt: element {first + stored} cannot be pickled to leave its worker process"
            )
        if isinstance(error, SystemExit):  # user code asked the worker to exit: it does, and the
            raise error  # consumer reports the exit code (Grain: "terminated unexpectedly")
        if error is not None:
            break
    record, nbytes = writer.finish()
    return record, error, nbytes


def _serve(conn: connection.Connection, node: Any, arena: Any) -> None:
    bytes_per_element = 0.0  # of the last chunk
    while True:
        try:
            begin, count, batching, freed = protocol.decode(conn.recv_bytes())
        except EOFError:
            return
        arena.free(freed)
        start = time.perf_counter()
        piece = max(1, int(_PIECE_BYTES / bytes_per_element)) if bytes_per_element else count
        chunk_node = protocol.chunk_node(node, batching)
        record, error, nbytes = _compute(chunk_node, arena, begin, count, piece)
        if count:
            bytes_per_element = nbytes / count
        conn.send_bytes(
            protocol.encode(
                (
                    protocol.CHUNK,
                    record,
                    None if error is None else protocol.pack_error(error),
                    time.perf_counter() - start,
                    nbytes,
                )
            )
        )


def main(argv: list[str], release_gate: Callable[[], None]) -> int:
    (
        sock_fd,
        arena_fd,
        arena_size,
        payload_fd,
        dataset_size,
        init_size,
        index,
        count,
        uses_jax,
        parent_pid,
        _,
        _,
    ) = map(int, argv)
    _exit_with_parent(parent_pid)
    if not uses_jax:
        _tree.use_plain_trees()
    _keep_freed_memory()
    conn = connection.Connection(sock_fd)
    try:
        arena = _core.Arena(arena_fd, arena_size)
        os.close(arena_fd)
        dataset, worker_init_fn = _load_payload(payload_fd, dataset_size, init_size)
        if worker_init_fn is not None:
            worker_init_fn(index, count)
        node = dataset.engine_node
    except Exception as e:  # pylint: disable=broad-exception-caught
        e.add_note(f"spelt: raised while starting worker process {index} of {count}")
        try:
            conn.send_bytes(protocol.encode((protocol.FATAL, protocol.pack_error(e))))
        except (BrokenPipeError, ConnectionResetError):  # the consumer stopped listening
            pass
        return 1
    release_gate()
    try:
        conn.send_bytes(protocol.encode((protocol.READY,)))
        _serve(conn, node, arena)
    except (BrokenPipeError, ConnectionResetError):  # the consumer stopped listening
        pass
    return 0
