"""The native remote files: a ``pyarrow.fs.FileSystem``'s Arrow C++ object read and written by
libspelt without Python or the GIL (``spelt._parquet_native``, cpp/parquet_native/arrow_files.h).

:func:`capsule` turns a pyarrow filesystem into a PyCapsule of plain C function pointers
(cpp/include/spelt/native_files_abi.h) that ``spelt._core`` reads through
(cpp/include/spelt/native_file_system.h); ``spelt._file_system.Files`` hands it over as its
``native`` attribute. Where ``spelt._parquet_native`` was not built (no pyarrow at build time)
or does not load, or the filesystem's C++ object cannot be read, :func:`capsule` gives None
and the Python path (``spelt._remote_reads``) reads instead. fsspec filesystems always take the
Python path.

The native files follow ``spelt.config``'s ``remote_*`` flags (pushed on every update) and count
their requests apart from the Python path's (:func:`counters`, added into
``spelt._remote_reads.stats()``). Thread-safe.

One capsule is made per filesystem object in a process and shared by every source, reader and
writer opened over it: making one makes an S3 client, which waits until no S3 request of the
process is in flight (Arrow's lock that keeps clients alive until finalization, taken shared by
every request), 30-50 ms per shard of ``spelt convert`` into a bucket at 20 ms when each
writer made its own.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

from spelt import _config

# spelt._parquet_native once native_module() has looked (None if it does not load); Ellipsis
# until then, so that `import spelt` does not import pyarrow (~30 ms).
_native: Any = ...
# The fewest connections the native files' S3 client is made with (more where the in-flight
# limit is higher when the files are made; cpp/parquet_native/arrow_files.h, WithConnections).
_MIN_CONNECTIONS = 64
# (id of the filesystem, description) -> (a weak reference to it, connections, capsule), for
# this process (a forked child makes its own: the parent's connections are not its to use).
_capsules: dict[tuple[int, str], tuple[weakref.ref, int, Any]] = {}
_capsules_pid = os.getpid()
_capsules_lock = threading.Lock()


def native_module() -> Any:
    """``spelt._parquet_native``, or None where it was not built or does not load (no pyarrow,
    or a pyarrow of another ABI: docs/install.md). Imported on the first call; it needs
    pyarrow's libraries, loaded by pyarrow's import."""
    global _native  # pylint: disable=global-statement
    if _native is ...:
        try:
            import pyarrow  # noqa: F401  # pylint: disable=import-outside-toplevel,unused-import

            from spelt import _parquet_native  # pylint: disable=import-outside-toplevel

            _native = _parquet_native
            _config.on_update(lambda name: _configure(_parquet_native, name))
            _configure(_parquet_native)
        except ImportError:
            _native = None
    return _native


def _configure(module: Any, name: str = "remote_") -> None:
    """Pushes the ``remote_*`` flags to ``module`` after ``name`` changed."""
    if name.startswith("remote_"):
        c = _config.config
        module.configure(
            c.remote_max_in_flight, float(c.remote_retry_seconds), c.remote_read_ahead_mib << 20
        )


def capsule(filesystem: Any, description: str) -> Any:
    """The native files of ``filesystem`` (a ``pyarrow.fs.FileSystem``), or None where the
    Python path must read it (see the module)."""
    native = native_module()
    if native is None:
        return None
    import pyarrow.fs  # pylint: disable=import-outside-toplevel

    global _capsules_pid  # pylint: disable=global-statement  # one cache per process
    connections = max(_config.config.remote_max_in_flight, _MIN_CONNECTIONS)
    key = (id(filesystem), description)
    with _capsules_lock:
        if _capsules_pid != os.getpid():
            _capsules.clear()
            _capsules_pid = os.getpid()
        held = _capsules.get(key)
        if held is not None and held[0]() is filesystem and held[1] >= connections:
            return held[2]
    made = native.native_files(filesystem, pyarrow.fs.FileSystem, description, connections)
    if made is not None:
        with _capsules_lock:
            # Dropped with the filesystem (before its id can be reused).
            ref = weakref.ref(filesystem, lambda _, key=key: _capsules.pop(key, None))
            _capsules[key] = (ref, connections, made)
    return made


def counters() -> tuple[int, int, int, int, int]:
    """The native files' (requests, bytes, retries, in flight now, most in flight at once) in
    this process; zeros before any was opened."""
    if _native is ... or _native is None:
        return (0, 0, 0, 0, 0)
    return _native.remote_counters()
