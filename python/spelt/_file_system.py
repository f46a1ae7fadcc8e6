"""Files by path or URI for the native readers and writers (ArrayRecord, TFRecord).

Local paths and ``file://`` URIs are opened by libspelt itself (pread). Any other URI, or any
path given with a ``filesystem=`` object, is opened through a library: a
``pyarrow.fs.FileSystem`` (S3, GCS, Azure, HDFS as shipped in the pyarrow wheel) or an fsspec
filesystem (``s3fs``, ``gcsfs``, ``memory://``, ``hf://`` ...).

A pyarrow filesystem's files are read and written natively: :class:`Files` carries the Arrow
C++ object of the filesystem as ``native`` (spelt._native_files), and libspelt reads through it
without Python or the GIL. Otherwise (fsspec, or no ``spelt._parquet_native`` in this build)
libspelt calls back into :class:`Files` with the GIL for the call only. Either way a batch of
reads goes out as concurrent range requests, with retries and checks that the object did not
change (cpp/parquet_native/arrow_files.h, spelt._remote_reads).

URIs without ``filesystem=`` resolve with ``pyarrow.fs.FileSystem.from_uri`` for the schemes
Arrow ships (s3, gs, gcs, hdfs, viewfs, abfs, abfss) and with ``fsspec.core.url_to_fs``
otherwise (or when pyarrow is missing). Credentials are each library's own configuration
(environment variables, profile files, metadata servers); see docs/remote.md.
"""

from __future__ import annotations

import fnmatch
import os
import pickle
import posixpath
import re
import threading
from collections.abc import Sequence
from typing import Any

from spelt import _native_files
from spelt import _paths
from spelt import _remote_reads

_ARROW_SCHEMES = frozenset({"s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"})
_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
# pyarrow's S3 client (the AWS SDK's) keeps at most 25 connections, so more reads at once
# queue inside it: a file's reads are spread over copies of the filesystem, each with its own
# client, at most this many of the read pool's threads to each.
_ARROW_CONNECTIONS = 25
# fsspec info() keys that tell versions of an object apart, best first (S3, GCS, Azure, ...).
_VERSION_KEYS = ("ETag", "etag", "generation", "md5Hash", "version_id")
_MTIME_KEYS = ("mtime", "LastModified", "last_modified", "updated")


def scheme(uri: str) -> str:
    """The lower-case scheme of ``uri`` (``""`` for a plain path)."""
    match = _URI.match(uri)
    return match["scheme"].lower() if match else ""


def is_local(uri: str, filesystem: Any = None) -> bool:
    """Whether libspelt opens ``uri`` itself (no ``filesystem``; a path or ``file://``)."""
    return filesystem is None and scheme(uri) in ("", "file")


def _is_arrow(filesystem: Any) -> bool:
    try:
        import pyarrow.fs  # pylint: disable=import-outside-toplevel
    except ImportError:
        return False
    return isinstance(filesystem, pyarrow.fs.FileSystem)


class _Output:
    """A file being written: ``write``, ``close`` (complete it) and ``discard`` (remove it)."""

    def __init__(self, files: Files, uri: str, stream: Any):
        self._files = files
        self._uri = uri
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._files.call("write", self._uri, self._stream.write, data)

    def close(self) -> None:
        self._files.call("write", self._uri, self._stream.close)

    def discard(self) -> None:
        try:
            self._stream.close()
        finally:
            self._files.remove(self._uri)


class Files:
    """A pyarrow.fs or fsspec filesystem as libspelt's files (spelt/file_system.h); picklable
    (the filesystem object is pickled, no open file is; an unpickled one reopens natively).
    Errors name the URI.

    Attributes:
        native: the native files of a pyarrow filesystem (a PyCapsule that libspelt reads
            through without Python, spelt._native_files), or None: libspelt then calls
            ``open_input`` / ``open_output``.
    """

    def __init__(self, filesystem: Any, description: str):
        self.filesystem = filesystem
        self.arrow = _is_arrow(filesystem)
        self._description = description
        self._init_clients()

    def _init_clients(self) -> None:
        self._clients = [self.filesystem]  # copies of a pyarrow filesystem, see _arrow_client
        self._clients_lock = threading.Lock()
        self._native: Any = ...  # see native

    @property
    def native(self) -> Any:
        """The native files (made on first use, as only readers and writers need them)."""
        with self._clients_lock:
            if self._native is ...:
                self._native = (
                    _native_files.capsule(self.filesystem, self._description)
                    if self.arrow
                    else None
                )
            return self._native

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_clients"], state["_clients_lock"], state["_native"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_clients()

    def _arrow_client(self, i: int) -> Any:
        """Copy ``i`` of the pyarrow filesystem (0: itself), each with its own client and so
        its own connections."""
        with self._clients_lock:
            while len(self._clients) <= i:
                self._clients.append(pickle.loads(pickle.dumps(self.filesystem)))
            return self._clients[i]

    def __repr__(self) -> str:
        return f"Files({self._description})"

    def path_on(self, uri: str) -> str:
        """``uri`` as the filesystem takes it: pyarrow filesystems take "bucket/key", fsspec
        ones strip their own protocols."""
        if self.arrow and scheme(uri):
            return uri.split("://", 1)[1]
        return uri

    def call(self, what: str, uri: str, fn, *args):
        """``fn(*args)``, its errors re-raised naming ``uri`` (FileNotFoundError kept)."""
        try:
            return fn(*args)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"no such file: {uri!r} ({self._description})") from e
        except Exception as e:
            raise OSError(
                f"cannot {what} {uri!r} through {self._description}: {type(e).__name__}:"
                f" {str(e).rstrip('.')}."
                " Check the URI, that the bucket exists, and the credentials of that library"
                " (environment variables, profile files; or pass filesystem=)"
            ) from e

    # Called by libspelt where ``native`` is None (cpp/python/py_file_system.h).
    def open_input(self, uri: str) -> _remote_reads.RangeReader:
        """The object's range reads (spelt._remote_reads), checked against its version."""
        version = self.version(uri)
        path = self.path_on(uri)
        if self.arrow:
            handles = {0: self.call("read", uri, self.filesystem.open_input_file, path)}
            size = handles[0].size()
            lock = threading.Lock()

            def read(offset, n):
                # At most _ARROW_CONNECTIONS pool threads share one client (and its handle).
                client = _remote_reads.thread_slot() // _ARROW_CONNECTIONS
                file = handles.get(client)
                if file is None:  # opened once per client; reads on other clients go on
                    with lock:
                        if client not in handles:
                            handles[client] = self._arrow_client(client).open_input_file(path)
                        file = handles[client]
                return file.read_at(n, offset)
        else:
            size = version[0]

            def read(offset, n):
                return self.filesystem.cat_file(path, start=offset, end=offset + n)

        return _remote_reads.RangeReader(uri, size, version, read, lambda: self.version(uri))

    def version(self, uri: str) -> tuple[Any, ...]:
        """What tells versions of the object apart, looked up now: (size, mtime in ns) from
        pyarrow; (size, ETag, generation or else mtime) from fsspec. FileNotFoundError if it
        does not exist."""
        path = self.path_on(uri)
        if self.arrow:
            import pyarrow.fs  # pylint: disable=import-outside-toplevel

            info = self.call("read", uri, self.filesystem.get_file_info, path)
            if info.type == pyarrow.fs.FileType.NotFound:
                raise FileNotFoundError(f"no such file: {uri!r} ({self._description})")
            return (info.size, info.mtime_ns)
        self.filesystem.invalidate_cache(path)  # a fresh lookup, not a listing's cached entry
        info = self.call("read", uri, self.filesystem.info, path)
        keys = [k for k in _VERSION_KEYS if info.get(k) is not None] or [
            k for k in _MTIME_KEYS if info.get(k) is not None
        ]
        return (info["size"], *(str(info[k]) for k in keys[:1]))

    def open_output(self, uri: str) -> _Output:
        return _Output(self, uri, self.filesystem_open(uri, "wb"))

    # For the Python face.
    def filesystem_open(self, uri: str, mode: str) -> Any:
        """A Python file object of ``uri`` (mode ``"rb"`` or ``"wb"``), for small files."""
        path = self.path_on(uri)
        if not self.arrow:
            return self.call("open", uri, self.filesystem.open, path, mode)
        if mode == "rb":
            return self.call("read", uri, self.filesystem.open_input_stream, path)
        return self.call("write", uri, self.filesystem.open_output_stream, path)

    def is_file(self, uri: str) -> bool:
        path = self.path_on(uri)
        if self.arrow:
            import pyarrow.fs  # pylint: disable=import-outside-toplevel

            info = self.call("read", uri, self.filesystem.get_file_info, path)
            return info.type == pyarrow.fs.FileType.File
        return self.call("read", uri, self.filesystem.isfile, path)

    def size(self, uri: str) -> int:
        path = self.path_on(uri)
        if self.arrow:
            return self.call("read", uri, lambda: self.filesystem.get_file_info(path).size)
        return self.call("read", uri, self.filesystem.size, path)

    def remove(self, uri: str) -> None:
        """Deletes ``uri`` if it exists."""
        path = self.path_on(uri)
        try:
            if self.arrow:
                self.filesystem.delete_file(path)
            else:
                self.filesystem.rm_file(path)
        except FileNotFoundError:
            pass

    def glob(self, pattern: str) -> list[str]:
        """The files matching ``pattern`` (``*``, ``?``, ``[...]`` in its last component), as
        URIs in the pattern's form, sorted."""
        prefix = pattern[: len(pattern) - len(self.path_on(pattern))]  # "s3://" or ""
        if self.arrow:
            import pyarrow.fs  # pylint: disable=import-outside-toplevel

            folder, name = posixpath.split(self.path_on(pattern))
            infos = self.call(
                "list", pattern, self.filesystem.get_file_info, pyarrow.fs.FileSelector(folder)
            )
            found = [
                prefix + i.path
                for i in infos
                if i.type == pyarrow.fs.FileType.File and fnmatch.fnmatchcase(i.base_name, name)
            ]
        else:
            found = [
                p if scheme(p) or not scheme(pattern) else self.filesystem.unstrip_protocol(p)
                for p in self.call("list", pattern, self.filesystem.glob, pattern)
            ]
        return sorted(found)


def files_for(uri: str, filesystem: Any = None) -> Files | None:
    """The :class:`Files` that open ``uri``: None for a local path (libspelt opens it), over
    ``filesystem`` when given (a pyarrow.fs.FileSystem or an fsspec filesystem), else
    resolved from the URI. Raises ValueError naming the URI when no installed library opens
    it."""
    if is_local(uri, filesystem):
        return None
    if filesystem is not None:
        if not (_is_arrow(filesystem) or hasattr(filesystem, "cat_ranges")):
            raise TypeError(
                "filesystem must be a pyarrow.fs.FileSystem or an fsspec filesystem, got"
                f" {type(filesystem).__name__}"
            )
        return Files(filesystem, type(filesystem).__name__)
    name = scheme(uri)
    errors = []
    if name in _ARROW_SCHEMES:
        try:
            import pyarrow.fs  # pylint: disable=import-outside-toplevel

            fs, _ = pyarrow.fs.FileSystem.from_uri(uri)
            return Files(fs, f"pyarrow.fs.{type(fs).__name__}")
        except ImportError:
            errors.append("pyarrow is not installed")
        except Exception as e:  # pylint: disable=broad-exception-caught  # try fsspec next
            errors.append(f"pyarrow.fs: {type(e).__name__}: {e}")
    try:
        import fsspec.core  # pylint: disable=import-outside-toplevel

        fs, _ = fsspec.core.url_to_fs(uri)
        return Files(fs, f"fsspec {type(fs).__name__}")
    except ImportError as e:
        errors.append(f"fsspec: {e}")
    except Exception as e:  # pylint: disable=broad-exception-caught  # reported below
        errors.append(f"fsspec: {type(e).__name__}: {e}")
    raise ValueError(
        f"cannot open {uri!r}: no installed library handles {name}:// URIs ("
        + "; ".join(errors)
        + "). Install pyarrow (s3, gs, hdfs, abfs) or the fsspec implementation of the"
        " scheme (s3fs, gcsfs, adlfs ...), or pass filesystem="
    )


def normalize(path: _paths.PathLike, filesystem: Any, what: str) -> str:
    """``path`` as a string: a local path (``file://`` URIs converted, see
    ``spelt._paths.local_path``) or the URI as given, kept for a filesystem to open."""
    path = os.fspath(path)
    if is_local(path, filesystem):
        return _paths.local_path(path, what)
    return path


def files_for_all(uris: Sequence[str], filesystem: Any, what: str) -> Files | None:
    """:func:`files_for` of files that one source or command opens together: ValueError
    naming ``what`` if they mix local paths and URIs or URI schemes."""
    schemes = sorted({"" if is_local(u, filesystem) else scheme(u) for u in uris})
    if len(schemes) > 1:
        raise ValueError(
            f"{what}: the paths mix {' and '.join(s + '://' if s else 'local paths' for s in schemes)};"
            " give files of one filesystem"
        )
    return files_for(uris[0], filesystem)
