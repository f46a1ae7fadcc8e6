"""The inputs ``spelt convert`` reads, one class per kind, and how their records are encoded.

Every input is a sequence of records: ``len(input)`` records, ``input.records(start, stop)``
yields records ``[start, stop)`` as bytes. Errors (missing file, unreadable or corrupt file,
Parquet schema mismatch, bad line, empty directory) are ValueError / FileNotFoundError whose
message starts with the file's path.

| kind    | files                | one record                                               |
| ------- | -------------------- | -------------------------------------------------------- |
| npy     | .npy                 | row i (axis 0) in .npy format                            |
| npz     | .npz                 | .npz of row i of every array (same number of rows)       |
| parquet | .parquet, .pq        | .npz of row i, one array per column                      |
| jsonl   | .jsonl, .ndjson      | the line's bytes (checked to be JSON; blank lines skipped) |
| csv     | .csv                 | a JSON object {header: value as a string}, UTF-8         |
| tfrecord | .tfrecord, .tfrecords, .tfr | the record's bytes as stored (e.g. a tf.train.Example); gzip / zlib read, every CRC checked |
| files   | any (with --kind files) | .npz {"data": uint8 bytes of the file, "label": its path relative to the directory given} |

Decode .npy/.npz records with ``numpy.load(io.BytesIO(record))``, JSON with ``json.loads``.

Inputs may be URIs of object stores (``s3://bucket/data/``, a glob, or one object; see
docs/remote.md), except for kind files. Parquet and TFRecord inputs are read in ranges as the
sources read them; .npy and .npz objects are read whole into memory; JSON lines and CSV are
streamed.
"""

from __future__ import annotations

import abc
import csv
import io
import itertools
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from spelt import _file_system
from spelt import _npz
from spelt import _parquet
from spelt import tfrecord

# Extensions of each kind chosen by --kind auto (files has none: it is asked for).
EXTENSIONS = {
    "npy": (".npy",),
    "npz": (".npz",),
    "parquet": (".parquet", ".pq"),
    "jsonl": (".jsonl", ".ndjson"),
    "csv": (".csv",),
    "tfrecord": (".tfrecord", ".tfrecords", ".tfr"),
}
KINDS = (*EXTENSIONS, "files")
# How each kind's records are decoded, for the manifest.
RECORD_FORMATS = {
    "npy": "npy",
    "npz": "npz",
    "parquet": "npz",
    "jsonl": "json",
    "csv": "json",
    "tfrecord": "bytes",
    "files": "npz",
}


class Input(abc.ABC):
    """One input file (or, for kind files, one directory)."""

    kind: str

    def __init__(self, path: str):
        self.path = path
        self._files = _file_system.files_for(path)  # None for a local file

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def records(self, start: int, stop: int) -> Iterator[bytes]:
        """Records [start, stop) as bytes."""

    @abc.abstractmethod
    def schema(self) -> Any:
        """A JSON-compatible description of the records' fields (for the manifest)."""

    def fingerprint(self) -> dict[str, Any]:
        """What identifies this input's content for a resumed conversion: path, size, mtime
        (a URI: its size and version, e.g. the ETag)."""
        if self._files is not None:
            return {"path": self.path, "version": list(self._files.version(self.path))}
        st = os.stat(self.path)
        return {"path": os.path.abspath(self.path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}

    def _open(self) -> io.BufferedIOBase:
        """The file's bytes as a buffered binary stream (from the store for a URI)."""
        if self._files is None:
            return open(self.path, "rb")
        return io.BufferedReader(self._files.filesystem_open(self.path, "rb"))

    def _source(self) -> Any:
        """What numpy.load reads: the path, or the object's bytes (read whole) for a URI."""
        if self._files is None:
            return self.path
        with self._open() as f:
            return io.BytesIO(f.read())

    def _error(self, message: str) -> ValueError:
        return ValueError(f"{self.path}: {message}")


def _array_schema(array: np.ndarray) -> dict[str, Any]:
    return {"dtype": array.dtype.str, "shape": list(array.shape[1:])}


class NpyInput(Input):
    kind = "npy"

    def __init__(self, path: str):
        super().__init__(path)
        try:
            mmap = "r" if self._files is None else None
            self._array = np.load(self._source(), mmap_mode=mmap, allow_pickle=False)
        except ValueError as e:  # numpy's messages (not .npy, object arrays) omit the path
            raise self._error(f"cannot read: {e}") from e
        if self._array.ndim == 0:
            raise self._error("a 0-d array has no rows")

    def __len__(self) -> int:
        return len(self._array)

    def records(self, start: int, stop: int) -> Iterator[bytes]:
        for row in self._array[start:stop]:
            yield _npz.npy_bytes(row)

    def schema(self) -> Any:
        return _array_schema(self._array)


class NpzInput(Input):
    kind = "npz"

    def __init__(self, path: str):
        super().__init__(path)
        try:
            with np.load(self._source(), allow_pickle=False) as arrays:
                self._columns = {key: arrays[key] for key in arrays.files}
        except (ValueError, OSError) as e:
            raise self._error(f"cannot read: {e}") from e
        if not self._columns:
            raise self._error("the .npz file holds no arrays")
        for key, column in self._columns.items():
            if column.ndim == 0:
                raise self._error(f"array {key!r} is 0-d and has no rows")
        lengths = {key: len(column) for key, column in self._columns.items()}
        if len(set(lengths.values())) != 1:
            raise self._error(f"arrays have different numbers of rows: {lengths}")
        self._len = next(iter(lengths.values()))

    def __len__(self) -> int:
        return self._len

    def records(self, start: int, stop: int) -> Iterator[bytes]:
        names = list(self._columns)
        for row in zip(*(c[start:stop] for c in self._columns.values())):
            yield _npz.npz_bytes(dict(zip(names, row)))

    def schema(self) -> Any:
        return {key: _array_schema(c) for key, c in self._columns.items()}


# Rows of a Parquet file encoded together (npz_records).
_PARQUET_BLOCK = 4096


class ParquetInput(Input):
    kind = "parquet"

    def __init__(self, path: str, file: Any):
        super().__init__(path)
        self._reader = _parquet.RowGroupReader(file, _parquet.native_decoder(path, file, {}))
        meta = file.metadata
        self._sizes = [meta.row_group(g).num_rows for g in range(file.num_row_groups)]

    def __len__(self) -> int:
        return sum(self._sizes)

    def records(self, start: int, stop: int) -> Iterator[bytes]:
        first = 0
        for g, size in enumerate(self._sizes):
            lo, hi = max(start, first), min(stop, first + size)
            if lo < hi:
                group = self._reader.get(g)
                for block in range(lo, hi, _PARQUET_BLOCK):
                    end = min(block + _PARQUET_BLOCK, hi)
                    yield from self._block_records(group, first, block - first, end - first)
            first += size

    def _block_records(
        self, group: _parquet.RowGroup, group_start: int, start: int, stop: int
    ) -> Iterator[bytes]:
        """The records of rows [start, stop) of the row group (whose first row is row
        group_start of the file), encoded column-wise; ValueError (after the records before
        it) at the first row with a null value."""
        columns = [c[start:stop] for c in group.columns]
        first_null = min(
            (k for c in columns if c.dtype.hasobject for k, v in enumerate(c) if v is None),
            default=None,
        )
        end = stop - start if first_null is None else first_null
        yield from _npz.npz_records(group.names, [c[:end] for c in columns])
        if first_null is not None:
            row = group.rows(start + first_null, start + first_null + 1)[0]
            raise self._error(f"row {group_start + start + first_null} has a null value: {row}")

    def schema(self) -> Any:
        return {field.name: str(field.type) for field in self._reader.file.schema_arrow}


class JsonLinesInput(Input):
    kind = "jsonl"

    def __init__(self, path: str):
        super().__init__(path)
        self._len = sum(1 for _ in self._lines())
        self._keys: list[str] | None = None

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        with self._open() as f:
            for number, line in enumerate(f, 1):
                line = line.rstrip(b"\r\n")
                if line.strip():
                    yield number, line

    def __len__(self) -> int:
        return self._len

    def records(self, start: int, stop: int) -> Iterator[bytes]:
        for i, (number, line) in enumerate(self._lines()):
            if i >= stop:
                break
            if i >= start:
                try:
                    value = json.loads(line)
                except ValueError as e:
                    raise self._error(f"line {number} is not JSON: {e}") from e
                if self._keys is None and isinstance(value, dict):
                    self._keys = list(value)
                yield line

    def schema(self) -> Any:
        if self._keys is None:
            next(self.records(0, 1), None)
        return {"keys": self._keys}


class CsvInput(Input):
    kind = "csv"

    def __init__(self, path: str):
        super().__init__(path)
        rows = self._rows()
        self._header = next(rows, None)
        if self._header is None:
            raise self._error("the CSV file is empty (no header row)")
        self._len = sum(1 for _ in rows)

    def _rows(self) -> Iterator[list[str]]:
        with io.TextIOWrapper(self._open(), encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            for row in reader:
                if row:
                    if len(row) != len(getattr(self, "_header", None) or row):
                        raise self._error(
                            f"line {reader.line_num} has {len(row)} fields, the header has"
                            f" {len(self._header)}"
                        )
                    yield row

    def __len__(self) -> int:
        return self._len

    def records(self, start: int, stop: int) -> Iterator[bytes]:
        rows = self._rows()
        next(rows)  # the header
        for i, row in enumerate(rows):
            if i >= stop:
                break
            if i >= start:
                yield json.dumps(dict(zip(self._header, row)), ensure_ascii=False).encode()

    def schema(self) -> Any:
        return {"columns": self._header}


class FilesInput(Input):
    """Every regular file under a directory (recursively, sorted by relative path)."""

    kind = "files"

    def __init__(self, path: str):
        super().__init__(path)
        self._files = sorted(
            os.path.relpath(os.path.join(root, name), path).replace(os.sep, "/")
            for root, _, names in os.walk(path)
            for name in names
            if os.path.isfile(os.path.join(root, name))
        )
        if not self._files:
            raise self._error("the directory holds no files")

    def __len__(self) -> int:
        return len(self._files)

    def records(self, start: int, stop: int) -> Iterator[bytes]:
        for name in self._files[start:stop]:
            with open(os.path.join(self.path, name), "rb") as f:
                data = np.frombuffer(f.read(), np.uint8)
            yield _npz.npz_bytes({"data": data, "label": name})

    def schema(self) -> Any:
        extensions = sorted({os.path.splitext(name)[1] for name in self._files})
        return {
            "data": "uint8 bytes of the file",
            "label": "relative path",
            "extensions": extensions,
        }

    def fingerprint(self) -> dict[str, Any]:
        sizes = [os.path.getsize(os.path.join(self.path, name)) for name in self._files]
        return {"path": os.path.abspath(self.path), "files": len(self._files), "size": sum(sizes)}


class TFRecordInput(Input):
    kind = "tfrecord"

    def __init__(self, path: str):
        super().__init__(path)
        self._compression = tfrecord.detect_compression(path)
        self._len = sum(1 for _ in self._records())  # every CRC checked once up front

    def _records(self) -> Iterator[bytes]:
        return tfrecord.iter_records(self.path, self._compression)

    def __len__(self) -> int:
        return self._len

    def records(self, start: int, stop: int) -> Iterator[bytes]:
        return itertools.islice(self._records(), start, stop)

    def schema(self) -> Any:
        return {"compression": self._compression or "none"}


def _kind_of(path: str) -> str | None:
    lower = path.lower()
    for kind, extensions in EXTENSIONS.items():
        if lower.endswith(extensions):
            return kind
    return None


def _unsupported(path: str) -> ValueError:
    known = ", ".join(e for exts in EXTENSIONS.values() for e in exts)
    return ValueError(
        f"{path}: not a supported input ({known}, or a directory; --kind files for a folder of"
        " files such as images)"
    )


def _expand(item: str, kind: str) -> list[tuple[str, str]]:
    """(path, kind) of the files an argument names: a file, a directory (its data files) or,
    for a URI, a glob or a prefix ending in "/" (the data files below it)."""
    item = _file_system.normalize(item, None, "spelt convert")
    files = _file_system.files_for(item)
    if files is not None:
        if kind == "files":
            raise ValueError(f"{item}: --kind files reads local directories only")
        if any(c in item for c in "*?[") or item.endswith("/"):
            pattern = item if not item.endswith("/") else item + "*"
            return _data_files(item, files.glob(pattern), kind)
        if not files.is_file(item):
            raise FileNotFoundError(f"{item}: no such object (a prefix ends in /)")
    elif not os.path.exists(item):
        raise FileNotFoundError(f"{item}: no such file or directory")
    elif kind == "files":
        if not os.path.isdir(item):
            raise ValueError(f"{item}: --kind files takes directories")
        return [(item, "files")]
    elif os.path.isdir(item):
        return _data_files(item, [os.path.join(item, n) for n in sorted(os.listdir(item))], kind)
    detected = _kind_of(item)
    if kind == "auto":
        if detected is None:
            raise _unsupported(item)
        return [(item, detected)]
    return [(item, kind)]


def _data_files(folder: str, paths: Sequence[str], kind: str) -> list[tuple[str, str]]:
    """(path, kind) of the data files of ``kind`` ("auto": any) among a folder's ``paths``."""
    found = [(p, _kind_of(p)) for p in paths if _kind_of(p) and kind in ("auto", _kind_of(p))]
    if not found:
        wanted = "data" if kind == "auto" else kind
        raise ValueError(
            f"{folder}: no {wanted} files in this directory"
            + (" (for a folder of files such as images, use --kind files)" if paths else "")
        )
    return found


def open_inputs(items: Sequence[str], kind: str, allow_mixed: bool) -> list[Input]:
    """The inputs the command-line arguments name, in order. ``kind``: one of KINDS or "auto"
    (by extension; a directory gives its data files, sorted). ValueError for a mix of kinds
    without ``allow_mixed``, Parquet files whose schemas differ, and unreadable inputs."""
    found = [pair for item in items for pair in _expand(item, kind)]
    kinds = list(dict.fromkeys(k for _, k in found))
    if len(kinds) > 1 and not allow_mixed:
        examples = {k: next(p for p, kk in found if kk == k) for k in kinds}
        raise ValueError(
            "inputs of different kinds ("
            + ", ".join(f"{k}: {p}" for k, p in examples.items())
            + ") would be mixed into one dataset with different record formats; pass"
            " --allow-mixed to do so"
        )
    parquet_paths = [p for p, k in found if k == "parquet"]
    parquet_files = dict(zip(parquet_paths, _parquet.open_files(parquet_paths, {})))
    classes = {"npy": NpyInput, "npz": NpzInput, "jsonl": JsonLinesInput, "csv": CsvInput}
    classes["tfrecord"] = TFRecordInput
    classes["files"] = FilesInput
    return [
        ParquetInput(p, parquet_files[p]) if k == "parquet" else classes[k](p) for p, k in found
    ]
