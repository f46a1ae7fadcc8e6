"""ArrayRecord files: a data source and a writer, read and written by libspelt's own C++ code.

Files are interchangeable with the ``array-record`` package (both ways). Paths may be URIs
of object stores (``s3://``, ``gs://``, any fsspec protocol) or come with a ``filesystem=``
object (see ``spelt._file_system`` and docs/remote.md). Local reads run in C++
without the GIL; inside a pipeline (``MapDataset.source`` or a ``DataLoader``) records are
read by the engine's read-ahead threads. Corrupt files raise ``CorruptFileError`` (a
ValueError) naming the file and byte offset; transposed chunks raise ``UnsupportedError``
(a NotImplementedError).
"""

from __future__ import annotations

import glob
import operator
import os
import re
from typing import Any, Sequence

from spelt import _core
from spelt._file_source import FileSource
from spelt._file_system import files_for, files_for_all, is_local, normalize
from spelt._paths import PathLike
from spelt._record_writer import RecordWriter

CorruptFileError = _core.CorruptFileError
UnsupportedError = _core.UnsupportedError

_SHARD_SPEC = re.compile(r"^(?P<base>.+)@(?P<count>\d+)$")
_GLOB_CHARS = re.compile(r"[*?\[]")
_MANIFEST_SUFFIX = ".manifest.json"  # spelt convert's description of its shards


def expand_paths(
    paths: PathLike | Sequence[PathLike],
    what: str = "ArrayRecordDataSource",
    filesystem: Any = None,
) -> list[str]:
    """Expands path specs into a list of file paths or URIs, in order.

    Each spec is a path or URI, a glob (``train-*``, ``train-?????-of-00008``; matches sorted,
    minus the ``*.manifest.json`` that ``spelt convert`` writes beside its shards), or a
    sharded spec ``name@N`` meaning ``name-00000-of-0000N`` ... ``name-0000(N-1)-of-0000N``.
    ``file://`` URIs become local paths; other URIs (and every path when ``filesystem`` is
    given) are listed through pyarrow.fs / fsspec (``spelt._file_system``). Raises ValueError
    for an empty list or mixed filesystems, FileNotFoundError for a glob matching nothing or
    a missing local file (a missing remote file is reported when it is opened); messages
    start with ``what``.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise ValueError(f"{what}: no paths given")
    specs = [normalize(p, filesystem, what) for p in paths]
    files = files_for_all(specs, filesystem, what)
    exists = os.path.exists if files is None else files.is_file
    out: list[str] = []
    for spec in specs:
        match = _SHARD_SPEC.match(spec)
        if match and not exists(spec):
            count = int(match["count"])
            if count == 0:
                raise ValueError(f"{what}: sharded spec {spec!r} has 0 shards")
            out.extend(f"{match['base']}-{i:05d}-of-{count:05d}" for i in range(count))
        elif _GLOB_CHARS.search(spec) and not exists(spec):
            found = glob.glob(spec) if files is None else files.glob(spec)
            matches = sorted(m for m in found if not m.endswith(_MANIFEST_SUFFIX))
            if not matches:
                raise FileNotFoundError(f"{what}: no file matches {spec!r}")
            out.extend(matches)
        else:
            out.append(spec)
    for path in out:
        if files is None and not os.path.isfile(path):
            raise FileNotFoundError(f"{what}: no such file: {path!r}")
    return out


class ArrayRecordDataSource(FileSource):
    """Random access to the records (bytes) of one or more ArrayRecord files.

    Args:
      paths: a path, a glob, a sharded spec ``name@N``, or a sequence of them (see
        :func:`expand_paths`). Record keys run across the files in order.
      reader_options: accepted for compatibility with Grain / array-record. Spelt reads
        ``{"verify_data_hash": "false"}`` (default true: every chunk's data hash is checked);
        other keys are ignored.
      filesystem: a ``pyarrow.fs.FileSystem`` or fsspec filesystem that opens the paths
        (default: local paths by libspelt, URIs by the library of their scheme).

    ``len()`` is the number of records in all files; ``ds[i]`` returns record i as bytes
    (IndexError outside [0, len)); ``__getitems__(keys)`` reads many records in parallel,
    decoding each chunk once. Picklable: files are reopened (by URI, with the pickled
    ``filesystem``) where it is unpickled. The repr
    is array-record's (a hash of the paths) and goes into checkpoints. Thread-safe (see
    ``FileSource``).
    """

    def __init__(
        self,
        paths: PathLike | Sequence[PathLike],
        reader_options: dict[str, str] | None = None,
        *,
        filesystem: Any = None,
    ):
        self._paths = expand_paths(paths, filesystem=filesystem)
        self._reader_options = dict(reader_options or {})
        self._filesystem = filesystem
        self._open()

    def _open(self) -> None:
        verify = self._reader_options.get("verify_data_hash", "true").lower() != "false"
        files = files_for_all(self._paths, self._filesystem, "ArrayRecordDataSource")
        self._source = _core.ArrayRecordSource(self._paths, repr(self), verify, files)

    def __getitems__(self, record_keys: Sequence[int]) -> list[bytes]:
        keys = [operator.index(k) for k in record_keys]
        return self._source.read_many(keys, os.cpu_count() or 1)

    _getitems = __getitems__

    def __getstate__(self) -> dict[str, Any]:
        return {
            "paths": self._paths,
            "reader_options": self._reader_options,
            "filesystem": self._filesystem,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._paths = state["paths"]
        self._reader_options = state["reader_options"]
        self._filesystem = state.get("filesystem")
        self._open()


class ArrayRecordWriter(RecordWriter):
    """Writes an ArrayRecord file that array-record (and Spelt) can read.

    Args:
      path: the file to create (truncated if it exists): a path or URI.
      options: array-record's option string, e.g. ``"group_size:1,zstd:3"`` (the default
        when empty: group_size 1, zstd level 3, window_log 20), ``"brotli:6"``, ``"snappy"``,
        ``"uncompressed"``. ValueError names a bad option.
      filesystem: a ``pyarrow.fs.FileSystem`` or fsspec filesystem to write through (default:
        by the path's scheme).

    ``write(record: bytes)`` appends a record; ``close()`` writes the index (a file that was
    not closed is not readable). As a context manager, an exception in the ``with`` block
    removes the file. Not thread-safe (see ``RecordWriter``).
    """

    def __init__(self, path: PathLike, options: str = "", *, filesystem: Any = None):
        path = normalize(path, filesystem, "ArrayRecordWriter")
        files = files_for(path, filesystem)
        super().__init__(path, _core.ArrayRecordWriter.open(path, options, files), files)


def info(path: PathLike, filesystem: Any = None) -> dict[str, Any]:
    """Facts about one file (a path or URI): records, chunks, group size, compression, writer
    options, sizes.

    Raises FileNotFoundError for a missing path (or a directory), CorruptFileError and
    UnsupportedError as the data source does.
    """
    path = normalize(path, filesystem, "array_record.info")
    if is_local(path) and not os.path.isfile(path):  # else a bare RuntimeError
        raise FileNotFoundError(f"no such file: {path!r}")
    return _core.array_record_info(path, files_for(path, filesystem))
