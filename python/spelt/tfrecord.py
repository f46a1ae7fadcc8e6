"""TFRecord files: a stream dataset, a random-access data source and a writer, all native.

A TFRecord file is TensorFlow's sequence of framed records (uint64 length, masked CRC32C of
the length, payload, masked CRC32C of the payload), optionally gzip- or zlib-compressed as a
whole. Spelt checks every CRC: a mismatch, or a file that ends inside a record, raises
``CorruptFileError`` (a ValueError) whose message names the file and the record's byte offset
(in the decompressed stream for a compressed file). ``compression`` is TF's
``compression_type``: ``""`` (none), ``"GZIP"``, ``"ZLIB"``, or None to detect it from the
file's first bytes. Paths may be URIs of object stores, or come with a ``filesystem=`` object
(a pyarrow.fs or fsspec filesystem; see docs/remote.md).

Grain 0.2.18 (grain/_src/python/dataset/sources/tfrecord_dataset.py) reads uncompressed files
only and checks no CRC; Spelt's TFRecordIterDataset yields the same records and states.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from spelt import _core
from spelt._file_source import FileSource
from spelt._file_system import files_for, files_for_all, normalize
from spelt._record_writer import RecordWriter
from spelt.array_record import PathLike, expand_paths
from spelt.dataset import DatasetIterator, IterDataset

CorruptFileError = _core.CorruptFileError

# Indexing shows a progress bar when the files hold at least this many bytes.
PROGRESS_MIN_BYTES = 256 << 20
_COMPRESSIONS = ("", "GZIP", "ZLIB")


def _check_compression(compression: str | None) -> str | None:
    if compression is not None and compression not in _COMPRESSIONS:
        raise ValueError(
            f'TFRecord compression must be None (detect), "", "GZIP" or "ZLIB", got {compression!r}'
        )
    return compression


class TFRecordIterDataset(IterDataset):
    """The records of one TFRecord file, in order, as ``bytes`` (Grain's
    ``grain.experimental.TFRecordIterDataset``).

    Args:
      path: the file. It is opened when iterated (FileNotFoundError then, as in Grain).
      compression: ``""``, ``"GZIP"``, ``"ZLIB"``, or None (default) to detect gzip / zlib.
      filesystem: a ``pyarrow.fs.FileSystem`` or fsspec filesystem that opens ``path``
        (default: by its scheme).

    Iterator state: Grain's ``{"reader_offset": n}``, the byte offset of the next record (of the
    decompressed stream for a compressed file; restoring one decompresses up to there), so a
    state restores in a new process. Every length and payload CRC is checked
    (``CorruptFileError`` names the file and offset). Records are read by the engine in C++;
    a compressed file is decompressed ahead of the consumer by a thread of the engine's pool.
    """

    def __init__(self, path: PathLike, compression: str | None = None, *, filesystem: Any = None):
        super().__init__()
        self._path = normalize(path, filesystem, "TFRecordIterDataset")
        self._compression = _check_compression(compression)
        self._files = files_for(self._path, filesystem)  # picklable: reopens by URI

    def _make_node(self):
        # The engine node, for the transformations on top of this dataset.
        return _core.tfrecord_iter_dataset(self._path, self._compression, self._files)

    def __iter__(self) -> DatasetIterator:
        # Iterated directly: records go straight from the file into bytes objects.
        return _core.TFRecordIterator(self._path, self._compression, self._files)

    def __str__(self) -> str:
        return f"TFRecordIterDataset(path={self._path!r})"


DatasetIterator.register(_core.TFRecordIterator)


def iter_records(
    path: PathLike, compression: str | None = None, filesystem: Any = None
) -> Iterator[bytes]:
    """The records of one TFRecord file, in order (every CRC checked). For converters."""
    return iter(TFRecordIterDataset(path, compression, filesystem=filesystem))


class _Progress:
    """Index progress: a tqdm bar if tqdm is installed, else one stderr line rewritten."""

    def __init__(self, description: str):
        self._description = description
        self._bar: Any = None
        self._done = 0
        try:
            import tqdm  # pylint: disable=import-outside-toplevel
        except ImportError:
            self._tqdm = None
        else:
            self._tqdm = tqdm.tqdm

    def __call__(self, done: int, total: int) -> None:
        if self._tqdm is not None:
            if self._bar is None:
                self._bar = self._tqdm(
                    total=total, desc=self._description, unit="B", unit_scale=True
                )
            self._bar.update(done - self._done)
        else:
            print(
                f"\r{self._description}: {done / 1e6:,.0f} / {total / 1e6:,.0f} MB"
                f" ({100 * done // max(total, 1)}%)",
                end="",
                file=sys.stderr,
                flush=True,
            )
        self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._tqdm is None and self._done:
            print(file=sys.stderr, flush=True)


class TFRecordDataSource(FileSource):
    """Random access to the records (bytes) of uncompressed TFRecord files, so that a
    ``MapDataset`` over them shuffles globally, shards, and reads in worker processes.

    Args:
      paths: a path, a glob, a sharded spec ``name@N``, or a sequence of them (as
        ``ArrayRecordDataSource``). Record keys run across the files in order.
      progress: show a progress bar while indexing (tqdm if installed, else a line on stderr).
        None (default): only when the files hold at least ``PROGRESS_MIN_BYTES``.
      filesystem: a ``pyarrow.fs.FileSystem`` or fsspec filesystem that opens the paths
        (default: local paths by libspelt, URIs by the library of their scheme).

    Opening indexes the files: it reads every record header and checks its length CRC
    (CorruptFileError for a bad one or a truncated file; ValueError for a gzip / zlib file,
    which has no random access: use :class:`TFRecordIterDataset`). ``ds[i]`` reads record i and
    checks its payload CRC (IndexError outside [0, len)); ``__getitems__(keys)`` reads many
    with one engine call, consecutive keys with one read. Thread-safe; picklable (the files
    are reopened by URI, with the pickled ``filesystem``, and indexed again where it is
    unpickled).
    """

    def __init__(
        self,
        paths: PathLike | Sequence[PathLike],
        progress: bool | None = None,
        *,
        filesystem: Any = None,
    ):
        self._paths = expand_paths(paths, "TFRecordDataSource", filesystem)
        self._filesystem = filesystem
        self._open(progress)

    def _open(self, progress: bool | None) -> None:
        files = files_for_all(self._paths, self._filesystem, "TFRecordDataSource")
        if progress is None:
            size = os.path.getsize if files is None else files.size
            progress = sum(size(p) for p in self._paths) >= PROGRESS_MIN_BYTES
        report = _Progress("indexing TFRecord files") if progress else None
        try:
            self._source = _core.TFRecordSource(self._paths, repr(self), report, files)
        finally:
            if report is not None:
                report.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"paths": self._paths, "filesystem": self._filesystem}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._paths = state["paths"]
        self._filesystem = state.get("filesystem")
        self._open(progress=False)


class TFRecordWriter(RecordWriter):
    """Writes a TFRecord file that TensorFlow, Grain and Spelt read.

    Args:
      path: the file to create (truncated if it exists): a path or URI.
      compression: ``""`` (default), ``"GZIP"`` or ``"ZLIB"`` (the whole file compressed).
      level: zlib's compression level for GZIP / ZLIB, 0-9, or -1 (default) for zlib's default.
      filesystem: a ``pyarrow.fs.FileSystem`` or fsspec filesystem to write through (default:
        by the path's scheme).

    ``write(record: bytes)`` appends a record; ``close()`` flushes and closes the file (records
    are on disk only after it). As a context manager, an exception in the ``with`` block
    removes the file, so that no partial file is left looking complete. Not thread-safe (see
    ``RecordWriter``).
    """

    def __init__(
        self, path: PathLike, compression: str = "", level: int = -1, *, filesystem: Any = None
    ):
        if compression is None:
            raise ValueError('TFRecordWriter: compression must be "", "GZIP" or "ZLIB", not None')
        path = normalize(path, filesystem, "TFRecordWriter")
        files = files_for(path, filesystem)
        native = _core.TFRecordWriter.open(path, _check_compression(compression), level, files)
        super().__init__(path, native, files)


def detect_compression(path: PathLike, filesystem: Any = None) -> str:
    """``""``, ``"GZIP"`` or ``"ZLIB"``: the compression of a TFRecord file (a path or URI),
    from its first bytes (a valid first record header always means uncompressed)."""
    path = normalize(path, filesystem, "detect_compression")
    return _core.detect_tfrecord_compression(path, files_for(path, filesystem))


__all__ = [
    "CorruptFileError",
    "TFRecordDataSource",
    "TFRecordIterDataset",
    "TFRecordWriter",
    "detect_compression",
    "iter_records",
]
