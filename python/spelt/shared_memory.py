"""Grain's shared-memory objects, on anonymous memory that never outlives its processes.

``SharedMemoryArray`` / ``SharedMemoryArrayMetadata`` (``grain.multiprocessing``, Grain's
grain/_src/python/ipc/shared_memory_array.py) and ``SharedMemoryDataSource``
(``grain.sources``; ``InMemoryDataSource`` in ``grain.python``, Grain's data_sources.py).

Grain puts them in named POSIX shared memory (/dev/shm), which stays until someone unlinks it,
so a job killed before its ``unlink`` (with multiprocessing's resource tracker, as when a
scheduler SIGKILLs the process group) leaks it until reboot. Here a segment is an anonymous
``memfd`` (Linux): it is never in /dev/shm, and the kernel frees it when the last process
holding a descriptor or mapping of it ends, however it ends (SIGKILL included).

Names. A segment is still found by its name from any process of the same user, as in Grain:
the name ``spelt-<pid>-<serial>-<fd>`` says which process keeps it and under which descriptor,
and another process opens it through ``/proc/<pid>/fd/<fd>`` (checked to be that very segment,
else FileNotFoundError). The creating process keeps that descriptor until the segment is
unlinked by any process (``unlink`` marks the memfd with the seal ``F_SEAL_GROW``, which does
not affect mappings), or until it no longer maps the segment itself and another process has
opened it (marked with ``F_SEAL_SHRINK``): a segment handed over, as a worker hands its output
to the consumer, then belongs to the processes that opened it and goes when they are done with
it. Each process applies these marks when it next creates, opens or closes a segment. So a
segment lives until it is unlinked or handed over and unmapped everywhere, or until every
process that holds it has ended (in Grain, a segment nobody unlinks stays until reboot). Unlike
Grain, a name cannot be opened once its creator has ended or has dropped a segment another
process opened, and ``multiprocessing.shared_memory.SharedMemory(name)`` does not open it.

Thread-safety: creating, opening and unlinking are safe from several threads (one lock).
"""

from __future__ import annotations

import copyreg
import dataclasses
import fcntl
import itertools
import math
import mmap
import os
import pickle
import struct
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from spelt import _tree

_UNLINKED_SEAL = fcntl.F_SEAL_GROW
_HANDED_OVER_SEAL = fcntl.F_SEAL_SHRINK  # another process opened it by name
_lock = threading.RLock()  # re-entrant: an array's __del__ may run inside a locked section
_serial = itertools.count()
# name -> descriptor this process keeps so that the segment can be opened by name until it is
# unlinked (the segments this process created).
_kept: dict[str, int] = {}
# name -> how many Segments of it are open in this process.
_mapped: dict[str, int] = {}


def _seals(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_GET_SEALS)


def _sweep() -> None:
    """Closes the kept descriptors of segments unlinked elsewhere, and of segments that this
    process no longer maps and another process has opened (it now holds them: a segment
    handed to a consumer goes when the consumer is done). Caller holds _lock."""
    for name in list(_kept):
        fd = _kept.get(name)
        if fd is None:
            continue
        seals = _seals(fd)
        if seals & _UNLINKED_SEAL or (seals & _HANDED_OVER_SEAL and not _mapped.get(name)):
            os.close(_kept.pop(name))


def _parse(name: str) -> tuple[int, str, int]:
    """(pid, memfd name, fd) of a segment name; FileNotFoundError if it is not one of ours."""
    parts = name.split("-")
    if len(parts) != 4 or parts[0] != "spelt" or not all(p.isdigit() for p in parts[1:]):
        raise FileNotFoundError(f"no shared memory segment named {name!r}")
    return int(parts[1]), "-".join(parts[:3]), int(parts[3])


class Segment:
    """One mapping of a shared-memory segment in this process, with a descriptor of it.

    ``buf`` is a writable memoryview of ``size`` bytes; ``name`` opens it from other processes.
    ``close()`` unmaps it here; ``unlink()`` marks it for release everywhere (see module doc).
    """

    def __init__(self, fd: int, name: str, size: int):
        self._fd = fd
        self.name = name
        self.size = size
        # mmap of a 0-byte file is invalid; a 0-size segment maps one byte nobody reads.
        self._mmap = mmap.mmap(fd, max(size, 1))
        self._view = memoryview(self._mmap)
        self.buf = self._view[:size]

    @classmethod
    def create(cls, size: int) -> Segment:
        """A new zero-filled segment of ``size`` bytes (ValueError if negative)."""
        if size < 0:
            raise ValueError(f"shared memory size must be non-negative, got {size}")
        with _lock:
            _sweep()
            base = f"spelt-{os.getpid()}-{next(_serial)}"
            fd = os.memfd_create(base, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            try:
                os.ftruncate(fd, max(size, 1))
                kept = os.dup(fd)  # O_CLOEXEC too
                name = f"{base}-{kept}"
                _kept[name] = kept
                _mapped[name] = 1
            except BaseException:
                os.close(fd)
                raise
        return cls(fd, name, size)

    @classmethod
    def open(cls, name: str) -> Segment:
        """The segment called ``name``, mapped here. FileNotFoundError if it does not exist,
        was unlinked, or its creating process has ended."""
        pid, base, remote_fd = _parse(name)
        with _lock:
            _sweep()
            kept = _kept.get(name)
            if kept is not None:
                fd = os.dup(kept)
                _mapped[name] = _mapped.get(name, 0) + 1
            else:
                path = f"/proc/{pid}/fd/{remote_fd}"
                try:
                    if not os.readlink(path).startswith(f"/memfd:{base} "):
                        raise FileNotFoundError(path)
                    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
                    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _HANDED_OVER_SEAL)
                except (FileNotFoundError, ProcessLookupError, PermissionError) as e:
                    raise FileNotFoundError(
                        f"no shared memory segment named {name!r} (its creator, process {pid},"
                        " ended or unlinked it)"
                    ) from e
            if _seals(fd) & _UNLINKED_SEAL:
                os.close(fd)
                raise FileNotFoundError(f"shared memory segment {name!r} was unlinked")
        return cls(fd, name, os.fstat(fd).st_size)

    def close(self) -> None:
        """Closes the segment here: its descriptor now, its mapping now or, while arrays over
        ``buf`` still exist, when the last of them is garbage-collected. Idempotent."""
        if self._fd < 0:
            return
        os.close(self._fd)
        self._fd = -1
        with _lock:
            if self.name in _mapped:
                _mapped[self.name] -= 1
                if not _mapped[self.name]:
                    del _mapped[self.name]
            _sweep()
        try:
            self.buf.release()
            self._view.release()
            self._mmap.close()
        except BufferError:
            pass  # arrays still use the mapping; it goes with the last of them

    def unlink(self) -> None:
        """Releases the name: no process can open it any more, and the memory goes once every
        mapping is closed. Idempotent; works after ``close()`` in the creating process."""
        with _lock:
            kept = _kept.pop(self.name, None)
            fd = self._fd if self._fd >= 0 else kept
            if fd is not None:
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _UNLINKED_SEAL)
            if kept is not None:
                os.close(kept)
        if fd is None:  # closed here, and made elsewhere: reach it by name
            try:
                again = Segment.open(self.name)
            except FileNotFoundError:
                return  # already gone
            again.unlink()
            again.close()


@dataclasses.dataclass(slots=True, frozen=True)
class SharedMemoryArrayMetadata:
    """What opens a SharedMemoryArray in another process: segment ``name``, ``shape``, ``dtype``.
    Pickles as these three fields (as Grain's)."""

    name: str
    shape: Iterable[int]
    dtype: npt.DTypeLike

    def close_and_unlink_shm(self) -> None:
        """Unlinks the segment (FileNotFoundError if it no longer exists)."""
        segment = Segment.open(self.name)
        segment.unlink()
        segment.close()


class SharedMemoryArray(np.ndarray):
    """A numpy array in shared memory (Grain's ``SharedMemoryArray``).

    ``SharedMemoryArray(shape, dtype=float)`` makes a zero-filled array in a new segment;
    ``metadata`` describes it, and ``SharedMemoryArray.from_metadata(metadata)`` maps the same
    memory in any process of the user (zero-copy; writes are seen by both). Pickling sends the
    metadata, not the data (an array unpickled elsewhere maps the same memory). When the array
    (not a view of it) is garbage-collected, its mapping is closed, and if ``unlink_on_del()``
    was called the segment is unlinked: the last process using it should call it (as in Grain),
    though memory nobody unlinks is freed anyway when the processes holding it end. Results of
    numpy operations on it are plain ndarrays. ``enable_async_del`` is accepted; deletion here
    is always synchronous (closing an anonymous mapping does not block).
    """

    def __new__(cls, shape: Iterable[int], dtype: npt.DTypeLike = float):
        shape = tuple(shape)
        size = math.prod(shape) * np.dtype(dtype).itemsize
        return cls.from_shared_memory(Segment.create(size), shape, dtype)

    def __array_finalize__(self, obj):
        if getattr(obj, "shm", None) is not None and np.may_share_memory(self, obj):
            self.shm = obj.shm
        else:
            self.shm = None
        self._unlink_on_del = getattr(obj, "_unlink_on_del", False)

    def __array_wrap__(self, obj, context=None, return_scalar=False):  # pylint: disable=unused-argument
        if self is obj or type(self) is not type(self):
            return obj
        if return_scalar:
            return obj[()]
        return obj.view(np.ndarray)

    @classmethod
    def from_shared_memory(
        cls, shm: Segment, shape: Any, dtype: npt.DTypeLike
    ) -> SharedMemoryArray:
        obj = super().__new__(cls, shape, dtype, buffer=shm.buf)
        obj.shm = shm
        obj._unlink_on_del = False
        return obj

    @classmethod
    def from_metadata(cls, metadata: SharedMemoryArrayMetadata) -> SharedMemoryArray:
        """The array described by ``metadata``, mapped in this process (FileNotFoundError if its
        segment is gone)."""
        return cls.from_shared_memory(Segment.open(metadata.name), metadata.shape, metadata.dtype)

    @property
    def metadata(self) -> SharedMemoryArrayMetadata:
        if not isinstance(self.shm, Segment):
            raise ValueError("this array does not own a shared memory segment")
        return SharedMemoryArrayMetadata(name=self.shm.name, shape=self.shape, dtype=self.dtype)

    def __reduce_ex__(self, protocol):
        return _open_array, (self.shm.name, self.shape, self.dtype)

    @classmethod
    def enable_async_del(cls, num_threads: int = 1, max_outstanding_requests: int = 50) -> None:
        """Accepted for Grain's API; deletion stays synchronous."""
        del num_threads, max_outstanding_requests

    def unlink_on_del(self) -> None:
        """Makes this array unlink the segment when it is garbage-collected."""
        self._unlink_on_del = True

    def __del__(self) -> None:
        if not isinstance(self.base, mmap.mmap) or not isinstance(self.shm, Segment):
            return  # a view: the owning array closes the mapping
        shm = self.shm
        self.shm = None
        if self._unlink_on_del:
            shm.unlink()
        shm.close()


def _open_array(name: str, shape: Any, dtype: Any) -> SharedMemoryArray:
    return SharedMemoryArray.from_metadata(SharedMemoryArrayMetadata(name, shape, dtype))


def _copy_leaf(leaf: Any, min_size: int) -> Any:
    if isinstance(leaf, SharedMemoryArray):
        return leaf.metadata
    if (
        not isinstance(leaf, np.ndarray)
        or leaf.dtype.hasobject
        or not leaf.flags.c_contiguous
        or leaf.size == 0
        or leaf.nbytes < min_size
    ):
        return leaf
    out = SharedMemoryArray(leaf.shape, leaf.dtype)
    np.copyto(out, leaf, casting="no")
    return out.metadata


def copy_to_shm(struct: Any, min_size: int = 0) -> Any:
    """``struct`` with each C-contiguous, non-empty, non-object numpy leaf of at least
    ``min_size`` bytes copied to a new segment and replaced by its metadata (Grain's)."""
    return _tree.map_structure(lambda leaf: _copy_leaf(leaf, min_size), struct)


def _open_leaf(leaf: Any) -> Any:
    if isinstance(leaf, SharedMemoryArrayMetadata):
        leaf = SharedMemoryArray.from_metadata(leaf)
        leaf.unlink_on_del()
    return leaf


def open_from_shm(struct: Any) -> Any:
    """``struct`` with each metadata leaf opened as a SharedMemoryArray that unlinks its
    segment when garbage-collected (Grain's)."""
    return _tree.map_structure(_open_leaf, struct)


def unlink_shm(struct: Any) -> None:
    """Unlinks the segment of every metadata leaf of ``struct``."""
    _tree.map_structure(
        lambda leaf: (
            leaf.close_and_unlink_shm() if isinstance(leaf, SharedMemoryArrayMetadata) else None
        ),
        struct,
    )


_COUNT = struct.Struct("<q")


class SharedMemoryDataSource:
    """A sequence held in shared memory, readable from every process by pickling this source
    (Grain's ``SharedMemoryDataSource``, legacy ``InMemoryDataSource``).

    ``SharedMemoryDataSource(elements=None, name=None)``: with ``elements`` (a sequence of
    picklable objects; Grain allows int, float, bool, str, bytes, None) a new segment holds them;
    with only ``name``, the source named so in this process is opened again (FileExistsError if
    ``elements`` are given for a name in use, FileNotFoundError if ``name`` alone is unknown).
    ``source[i]`` (negative i from the end; IndexError outside) unpickles element i.
    Pickling sends the segment's name; the copy reads the same memory. ``close()`` unmaps it
    here, ``unlink()`` releases it (see the module doc: it is freed in any case when its
    processes end). Reads are thread-safe.
    """

    _by_name: dict[str, str] = {}  # user name -> segment name, for sources made in this process

    def __init__(self, elements: Iterable[Any] | None = None, name: str | None = None):
        if elements is None:
            if name is None:
                raise ValueError("SharedMemoryDataSource needs elements or the name of a source")
            segment_name = self._by_name.get(name, name)
            self._attach(Segment.open(segment_name), name)
            return
        if name is not None and name in self._by_name and self._by_name[name] in _kept:
            raise FileExistsError(f"a shared memory data source named {name!r} exists")
        blobs = [pickle.dumps(e, protocol=pickle.HIGHEST_PROTOCOL) for e in elements]
        offsets = np.cumsum([0] + [len(b) for b in blobs], dtype=np.int64)
        header = _COUNT.size + offsets.nbytes
        segment = Segment.create(header + int(offsets[-1]))
        _COUNT.pack_into(segment.buf, 0, len(blobs))
        segment.buf[_COUNT.size : header] = offsets.tobytes()
        for blob, start in zip(blobs, offsets[:-1]):
            segment.buf[header + int(start) : header + int(start) + len(blob)] = blob
        name = segment.name if name is None else name
        self._by_name[name] = segment.name
        self._attach(segment, name)

    def _attach(self, segment: Segment, name: str) -> None:
        self.shm = segment
        self.name = name
        (count,) = _COUNT.unpack_from(segment.buf, 0)
        self._offsets = np.frombuffer(
            segment.buf, dtype=np.int64, count=count + 1, offset=_COUNT.size
        )
        self._data_start = _COUNT.size + self._offsets.nbytes

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index: int) -> Any:
        n = len(self)
        position = index + n if index < 0 else index
        if not 0 <= position < n:
            raise IndexError(f"index {index} out of range for a source of length {n}")
        start = self._data_start + int(self._offsets[position])
        stop = self._data_start + int(self._offsets[position + 1])
        return pickle.loads(self.shm.buf[start:stop])

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def __str__(self) -> str:
        return f"InMemoryDataSource(name={self.name}, len={len(self)})"

    __repr__ = __str__

    def __reduce__(self):
        # Rebuilt with __new__ and __setstate__: the copy attaches to the same segment.
        return copyreg.__newobj__, (type(self),), (self.shm.name, self.name)

    def __setstate__(self, state: tuple[str, str]) -> None:
        segment_name, name = state
        self._attach(Segment.open(segment_name), name)

    def close(self) -> None:
        """Closes the source here; it is empty afterwards."""
        self._offsets = np.zeros(1, dtype=np.int64)
        self.shm.close()

    def unlink(self) -> None:
        self._by_name.pop(self.name, None)
        self.shm.unlink()
