"""Range reads of remote objects: the per-process in-flight limit, retries, and change checks.

This is the Python path: fsspec filesystems, and pyarrow ones where the native files are not
available (spelt._native_files; cpp/parquet_native/arrow_files.h does the same natively, with
its own pool of the same size). libspelt hands a remote file's batch of reads to Python as ranges (already coalesced and split,
spelt/range_reads.h). Each range is one request, sent on a process-wide thread pool whose size
is the in-flight limit ``spelt.config.remote_max_in_flight`` (default 256): at most that many
requests of this process wait on a store at once, whichever files and threads they serve.

A request that fails in a way that may pass (throttling, 500 and 503 answers, a connection reset
or timeout, a body cut short) is retried with exponential backoff until
``spelt.config.remote_retry_seconds`` (default 60) have passed since its first try. pyarrow's S3
client and s3fs retry such errors a few times themselves first; this loop is what remains after
they gave up, bounded in time rather than multiplied by a count. Before each retry the object is
looked up again: if its size, ETag, generation or modification time differ from what was seen
when it was opened, ``CorruptFileError`` names the URI and byte offset (the bytes read so far
may mix two versions). A range past the size seen at open (an object shorter than its index
says) raises ``CorruptFileError`` without a request. Bytes are returned once per range, whole.

Counters of the process (requests, bytes, retries, the most requests in flight at once) are
read with :func:`stats`; the execution summary prints them for the iterator's lifetime.
Thread-safe.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import errno
import itertools
import os
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from spelt import _config
from spelt import _native_files

_BACKOFF_FIRST_S = 0.05
_BACKOFF_MAX_S = 2.0
# Errors worth another try: throttling, server errors, dropped or cut connections.
_TRANSIENT = re.compile(
    r"\b(50[0-9]|429|slow[ _]?down|throttl\w*|service[ _]?unavailable|"
    r"internal[ _]?(error|failure)|request[ _]?timeout|timed? ?out|reset|connection|broken pipe|"
    r"partial file|incomplete ?read|payload|network_connection|curl ?code|"
    r"reduce your request rate|try again)\b",
    re.IGNORECASE,
)
# errno values of OSErrors worth another try (s3fs maps SlowDown to EBUSY, 500 to EREMOTEIO).
_TRANSIENT_ERRNO = frozenset(
    {
        errno.EBUSY,
        errno.EREMOTEIO,
        errno.EAGAIN,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.ETIMEDOUT,
        errno.EPIPE,
    }
)


@dataclasses.dataclass(frozen=True)
class Stats:
    """Remote reads of this process since it started.

    Attributes:
        requests: range requests sent, retries included (int).
        bytes: bytes received (int).
        retries: requests sent again after a transient failure (int).
        in_flight: requests waiting on a store now (int).
        peak_in_flight: the most requests in flight at once (int).
    """

    requests: int = 0
    bytes: int = 0
    retries: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0

    def since(self, start: Stats) -> Stats:
        """The requests, bytes and retries after ``start`` was taken (in flight and peak as
        now)."""
        return dataclasses.replace(
            self,
            requests=self.requests - start.requests,
            bytes=self.bytes - start.bytes,
            retries=self.retries - start.retries,
        )

    def line(self) -> str:
        """One line for the execution summary."""
        return (
            f"Remote reads: {self.requests} requests ({self.retries} retried),"
            f" {self.bytes / 2**20:.1f} MiB; {self.in_flight} in flight now, at most"
            f" {self.peak_in_flight} at once in this process"
            f" (limit {_config.config.remote_max_in_flight})"
        )


_lock = threading.Lock()
_counters = dict.fromkeys((f.name for f in dataclasses.fields(Stats)), 0)  # guarded by _lock
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_size = 0
_thread = threading.local()  # .slot: the pool thread's number


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's pool threads: it starts its own pool."""
    global _lock, _pool, _pool_size  # pylint: disable=global-statement  # process-wide state
    _lock = threading.Lock()
    _pool, _pool_size = None, 0
    _counters["in_flight"] = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


def stats() -> Stats:
    """The process's counters now: the Python path's and the native files' together
    (spelt._native_files; the peak is the larger of the two paths' peaks)."""
    requests, received, retries, in_flight, peak = _native_files.counters()
    with _lock:
        return Stats(
            requests=_counters["requests"] + requests,
            bytes=_counters["bytes"] + received,
            retries=_counters["retries"] + retries,
            in_flight=_counters["in_flight"] + in_flight,
            peak_in_flight=max(_counters["peak_in_flight"], peak),
        )


def _count(requests: int = 0, received: int = 0, retries: int = 0, in_flight: int = 0) -> None:
    with _lock:
        _counters["requests"] += requests
        _counters["bytes"] += received
        _counters["retries"] += retries
        _counters["in_flight"] += in_flight
        _counters["peak_in_flight"] = max(_counters["peak_in_flight"], _counters["in_flight"])


def _read_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The pool of the current in-flight limit (a new one when the limit changed)."""
    global _pool, _pool_size  # pylint: disable=global-statement  # one pool per process
    size = _config.config.remote_max_in_flight
    with _lock:
        if _pool is None or _pool_size != size:
            if _pool is not None:
                _pool.shutdown(wait=False)  # its queued requests still run
            slots = itertools.count()
            _pool = concurrent.futures.ThreadPoolExecutor(
                size,
                thread_name_prefix="spelt-read",
                initializer=lambda: setattr(_thread, "slot", next(slots)),
            )
            _pool_size = size
        return _pool


def thread_slot() -> int:
    """The number of the pool thread this runs on: 0 to the in-flight limit - 1 (a request's
    reads run on the pool)."""
    return getattr(_thread, "slot", 0)


def _corrupt(uri: str, offset: int, detail: str) -> Exception:
    from spelt import _core  # pylint: disable=import-outside-toplevel  # loaded by the readers

    return _core.CorruptFileError(f"{uri}: corrupt remote file at byte offset {offset}: {detail}")


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` of a request may pass on another try."""
    if isinstance(error, (FileNotFoundError, PermissionError)):
        return False
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    if isinstance(error, OSError) and error.errno in _TRANSIENT_ERRNO:
        return True
    return bool(_TRANSIENT.search(f"{type(error).__name__}: {error}"))


class RangeReader:
    """Reads ranges of one object with retries; ``read`` and ``lookup`` come from the library
    (pyarrow.fs or fsspec, see spelt._file_system.Files.open_input). Thread-safe.

    Args:
        uri: what errors name.
        size: the object's size when opened.
        identity: what the object was when opened (size, ETag, generation, mtime: any
            comparable value; None when the library tells nothing).
        read: ``read(offset, length) -> bytes-like`` of one request (shorter where the
            object or the connection ends).
        lookup: ``lookup() -> identity`` of the object now; raises FileNotFoundError if gone.

    Attributes:
        read_ahead: bytes that libspelt's front-to-back readers keep being read ahead
            (``spelt.config.remote_read_ahead_mib`` when opened; RandomAccessFile::ReadAheadBytes).
    """

    def __init__(
        self,
        uri: str,
        size: int,
        identity: Any,
        read: Callable[[int, int], Any],
        lookup: Callable[[], Any],
    ):
        self.uri = uri
        self.size = size
        self._identity = identity
        self._read = read
        self._lookup = lookup
        self.read_ahead = _config.config.remote_read_ahead_mib << 20

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[Any]:
        """The bytes of each ``(offset, length)``, requested concurrently (see the module)."""
        for offset, length in ranges:
            if offset + length > self.size:
                raise _corrupt(
                    self.uri,
                    self.size,
                    f"the object has {self.size} bytes, bytes up to {offset + length} were"
                    " asked for (it is shorter than its index says)",
                )
        # Even one range goes through the pool: the pool's size is the process's limit.
        return list(_read_pool().map(lambda r: self._read_range(*r), ranges))

    def _read_range(self, offset: int, length: int) -> Any:
        start = time.monotonic()
        deadline = start + _config.config.remote_retry_seconds
        attempt = 0
        while True:
            _count(requests=1, in_flight=1, retries=1 if attempt else 0)
            try:
                data = self._read(offset, length)
                got = memoryview(data).nbytes
                error: BaseException | None = None
            except Exception as e:  # pylint: disable=broad-exception-caught  # sorted below
                got, error = 0, e
            finally:
                _count(in_flight=-1)
            if error is None:
                _count(received=got)
                if got == length:
                    return data
                detail = f"read {got} of {length} bytes"
            elif is_transient(error):
                detail = f"{type(error).__name__}: {error}"
            else:
                self._check_unchanged(offset)
                raise error
            self._check_unchanged(offset + got)
            delay = min(_BACKOFF_FIRST_S * 2**attempt, _BACKOFF_MAX_S) * random.uniform(0.5, 1)
            if time.monotonic() + delay > deadline:
                message = (
                    f"{detail}; gave up after {attempt + 1} tries in"
                    f" {time.monotonic() - start:.1f} s (spelt.config.remote_retry_seconds)"
                )
                if error is None:
                    raise _corrupt(self.uri, offset + got, message + " (the object ends early)")
                raise OSError(
                    f"cannot read {self.uri!r} at byte offset {offset}: {message}"
                ) from error
            time.sleep(delay)
            attempt += 1

    def _check_unchanged(self, offset: int) -> None:
        """CorruptFileError at ``offset`` if the object is no longer what was opened."""
        try:
            now = self._lookup()
        except FileNotFoundError:
            raise _corrupt(self.uri, offset, "the object was removed since it was opened") from None
        except Exception:  # pylint: disable=broad-exception-caught  # the read's error tells more
            return
        if self._identity is not None and now != self._identity:
            raise _corrupt(
                self.uri,
                offset,
                f"the object changed since it was opened (was {self._identity}, now {now})",
            )
