"""Parquet row groups as numpy columns: what ParquetIterDataset, ParquetDataSource and
``spelt convert`` share.

pyarrow is an optional dependency (``pip install 'spelt-ml[parquet]'``), imported on first use.
A row group becomes one numpy array per column, as Grain 0.2.18 builds it
(grain/_src/python/dataset/sources/parquet_dataset.py: ``table.column(i).to_numpy()``), so a
row is ``{name: column[i]}``: numpy scalars for numeric columns, ``str``/``bytes`` for string
and binary columns, numpy arrays for list columns. One exception, for speed, with equal rows: a
list column with no nulls whose rows all have the same length is kept as one 2-D array, whose
row i is a view equal to Grain's element (same dtype and shape).

Decoding: in a local file read with no options, the columns of type int32/int64/float32/float64,
string/binary or a list of those numbers are decoded by ``spelt._parquet_native`` (Arrow C++'s
low-level column readers from the pyarrow wheel, ~3x less CPU than ``read_row_group`` on a
``list<float>`` column; built only where pyarrow was importable at build time). Other columns,
those columns in a row group where they hold nulls or lists of different lengths, and other
files go through pyarrow's ``read_row_group``. Both give the same arrays.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spelt import _core
from spelt import _file_system
from spelt import _native_files


def pyarrow_parquet() -> Any:
    """The ``pyarrow.parquet`` module; ImportError saying how to install it if missing."""
    try:
        import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        raise ImportError(
            "reading Parquet needs pyarrow: pip install 'spelt-ml[parquet]' (or pip install pyarrow)"
        ) from e
    return pq


def open_file(path: Any, read_kwargs: dict[str, Any]) -> Any:
    """``pyarrow.parquet.ParquetFile(path, **read_kwargs)``: a local path, a URI, or a path on
    ``read_kwargs["filesystem"]`` (a pyarrow.fs or fsspec filesystem). A URI without a
    filesystem opens through the filesystem the other sources would use (spelt._file_system:
    pyarrow.fs for s3, gs, hdfs, abfs; fsspec otherwise). FileNotFoundError / ValueError (not
    Parquet, corrupt footer) name the file."""
    pq = pyarrow_parquet()
    files = _file_system.files_for(os.fspath(path), read_kwargs.get("filesystem"))
    if files is not None:
        read_kwargs = {**read_kwargs, "filesystem": files.filesystem}
    try:
        return pq.ParquetFile(path if files is None else files.path_on(path), **read_kwargs)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{path}: no such Parquet file ({e})") from e
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"{path}: not a Parquet file or its footer is corrupt: {e}") from e


def open_files(paths: Sequence[Any], read_kwargs: dict[str, Any]) -> list[Any]:
    """``open_file`` of each path; ValueError naming the file if its Arrow schema differs from
    the first file's."""
    files = [open_file(path, read_kwargs) for path in paths]
    for path, f in zip(paths[1:], files[1:]):
        if not f.schema_arrow.equals(files[0].schema_arrow):
            raise ValueError(
                f"{path}: its schema differs from that of {paths[0]}:\n"
                f"{f.schema_arrow}\nversus\n{files[0].schema_arrow}"
            )
    return files


def _native_spec(t: Any) -> str:
    """The ``spelt._parquet_native`` column spec of an Arrow type; "" if the native decoder
    does not read it."""
    import pyarrow as pa  # pylint: disable=import-outside-toplevel

    numeric = {pa.int32(): "int32", pa.int64(): "int64", pa.float32(): "float32"}
    numeric[pa.float64()] = "float64"
    if t in numeric:
        return numeric[t]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "str"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    is_list = pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
    if is_list and t.value_type in numeric:
        return f"list<{numeric[t.value_type]}>"
    return ""


def _num_leaves(t: Any) -> int:
    """How many Parquet leaf columns store a value of Arrow type t."""
    import pyarrow as pa  # pylint: disable=import-outside-toplevel

    if isinstance(t, pa.BaseExtensionType):
        return _num_leaves(t.storage_type)
    if pa.types.is_map(t):
        return _num_leaves(t.key_type) + _num_leaves(t.item_type)
    if pa.types.is_struct(t):
        return sum(_num_leaves(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_dictionary(t):
        return 1
    if hasattr(t, "value_type"):  # list, large list, fixed-size list, list views
        return _num_leaves(t.value_type)
    return 1


class NativeDecoder:
    """A ``spelt._parquet_native.RowGroupDecoder`` of a file, with per Arrow field ``leaves``,
    the index of its leaf column if the native decoder reads it, else None, and ``specs``, its
    column spec ("" if not read)."""

    def __init__(self, decoder: Any, leaves: list[int | None], specs: list[str]):
        self.decoder, self.leaves, self.specs = decoder, leaves, specs


def native_decoder(path: Any, file: Any, read_kwargs: dict[str, Any]) -> NativeDecoder | None:
    """The NativeDecoder of ``file`` (opened from ``path``) if the module is available, the
    file is local and read with no options, and it reads at least one column (see the module
    docstring); else None."""
    native = _native_files.native_module()
    if native is None or read_kwargs or not isinstance(path, str) or not os.path.isfile(path):
        return None
    schema = file.schema_arrow
    if len(set(schema.names)) != len(schema.names):  # columns are found by name
        return None
    specs, leaves, field_specs = [], [], []
    for field in schema:
        spec = _native_spec(field.type)
        leaves.append(len(specs) if spec else None)
        field_specs.append(spec)
        specs += [spec] if spec else [""] * _num_leaves(field.type)
    if not any(specs) or len(specs) != file.metadata.num_columns:
        return None
    try:
        return NativeDecoder(native.RowGroupDecoder(path, specs), leaves, field_specs)
    except (ValueError, RuntimeError):  # leaves not as the Arrow schema says: pyarrow reads it
        return None


def _uniform_list_column(chunked: Any) -> np.ndarray | None:
    """A list column with no nulls, numeric or bool values and rows of one length as an
    (n, length) array (read-only, a view of Arrow's buffers where possible); None for any
    other column."""
    import pyarrow as pa  # pylint: disable=import-outside-toplevel
    import pyarrow.compute as pc  # pylint: disable=import-outside-toplevel

    t = chunked.type
    is_list = pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
    if not is_list or chunked.null_count or len(chunked) == 0:
        return None
    v = t.value_type
    if not (pa.types.is_integer(v) or pa.types.is_floating(v) or pa.types.is_boolean(v)):
        return None
    if pa.types.is_fixed_size_list(t):
        width = t.list_size
    else:
        bounds = pc.min_max(pc.list_value_length(chunked))
        width = bounds["min"].as_py()
        if width != bounds["max"].as_py():
            return None
    parts = []
    for chunk in chunked.chunks:
        values = chunk.flatten()
        if values.null_count:
            return None
        parts.append(values.to_numpy(zero_copy_only=False).reshape(len(chunk), width))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _text_type(chunked: Any) -> type | None:
    """``str`` for a string column with no nulls, ``bytes`` for such a binary column (their
    numpy arrays hold only values of that type); None for any other column."""
    import pyarrow as pa  # pylint: disable=import-outside-toplevel

    t = chunked.type
    if chunked.null_count:
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return str
    binary = pa.types.is_binary(t) or pa.types.is_large_binary(t)
    return bytes if binary or pa.types.is_fixed_size_binary(t) else None


@functools.lru_cache(maxsize=64)
def _dict_builder(num_columns: int) -> Callable[..., list[dict[str, Any]]]:
    """A function ``(names, column_0, ..., column_k) -> [{names[0]: column_0[r], ...} for each
    row r]`` for k + 1 = num_columns, whose comprehension builds each dict with a dict display
    (about twice as fast as ``dict(zip(names, row))``; equal keys: the last one wins in both).
    Only numbers go into the generated code, never a column name."""
    keys = ", ".join(f"k{j}" for j in range(num_columns))
    values = ", ".join(f"v{j}" for j in range(num_columns))
    columns = ", ".join(f"c{j}" for j in range(num_columns))
    display = ", ".join(f"k{j}: v{j}" for j in range(num_columns))
    source = (
        f"def build(names, {columns}):\n"
        f"    ({keys},) = names\n"
        f"    return [{{{display}}} for ({values},) in zip({columns})]\n"
    )
    if num_columns == 0:
        source = "def build(names):\n    return []\n"
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # pylint: disable=exec-used
    return namespace["build"]


def _from_arrow(chunked: Any) -> tuple[np.ndarray, type | None]:
    """A ``pyarrow.ChunkedArray`` as a RowGroup column and its text type."""
    uniform = _uniform_list_column(chunked)
    return uniform if uniform is not None else chunked.to_numpy(), _text_type(chunked)


class RowGroup:
    """The columns of one decoded row group. Immutable; safe to share between threads.

    ``names``: column names in file order; ``columns``: one numpy array per column, of length
    ``len(self)`` along axis 0 (object arrays for strings, bytes and ragged or nullable lists);
    ``text_types``: per column, ``str`` / ``bytes`` if its object array holds only values of
    that type (a string / binary column with no nulls), else None. A column decoded by
    ``spelt._parquet_native`` as a ``TextColumn`` becomes its object array on first use
    (``column(j)``), and batches can take its values without Python strings
    (``fixed_width_text``).
    """

    def __init__(
        self,
        names: list[str],
        columns: list[Any],
        text_types: list[type | None],
        length: int,
    ):
        self.names, self._columns, self.text_types, self._len = names, columns, text_types, length

    @classmethod
    def from_table(cls, table: Any) -> RowGroup:
        """The columns of a ``pyarrow.Table``, as Grain's ``to_numpy()`` gives them."""
        columns = [_from_arrow(table.column(i)) for i in range(table.num_columns)]
        return cls(
            list(table.column_names), [c for c, _ in columns], [t for _, t in columns], len(table)
        )

    @classmethod
    def from_decoded(
        cls, file: Any, native: NativeDecoder, decoded: Any, table: Any, length: int
    ) -> RowGroup:
        """The ``length`` rows of a ``spelt._parquet_native.DecodedRowGroup`` of ``native``
        (numeric arrays as they are, text columns as they come), the columns not decoded from
        ``table`` (by name)."""
        names, values = file.schema_arrow.names, decoded.columns()
        columns, text_types = [], []
        for name, leaf, spec in zip(names, native.leaves, native.specs):
            value = values[leaf] if leaf is not None else None
            if value is None:
                column, text_type = _from_arrow(table.column(name))
            elif isinstance(value, np.ndarray):
                # nanobind's int64 is numpy's longlong: view it as numpy's (and Arrow's) int64.
                column, text_type = value.view(np.dtype(value.dtype.name)), None
            else:
                column, text_type = value, str if spec == "str" else bytes
            columns.append(column)
            text_types.append(text_type)
        return cls(names, columns, text_types, length)

    def column(self, j: int) -> np.ndarray:
        """Column j as a numpy array."""
        column = self._columns[j]
        if not isinstance(column, np.ndarray):  # a TextColumn
            values = column.objects()
            column = np.empty(len(values), dtype=object)
            column[:] = values
            self._columns[j] = column  # the same array whichever thread makes it first
        return column

    @property
    def columns(self) -> list[np.ndarray]:
        """All columns as numpy arrays."""
        return [self.column(j) for j in range(len(self._columns))]

    def fixed_width_text(self, j: int, start: int, stop: int) -> np.ndarray | None:
        """Rows [start, stop) of str / bytes column j as numpy's ``<U`` / ``S`` array of them
        (as wide as the longest), made from the decoded bytes without Python strings; None if
        the column is not a native TextColumn or its values there are not all ASCII."""
        column = self._columns[j]
        if isinstance(column, np.ndarray):
            return None
        chars = column.fixed_width(start, stop)
        if chars is None:
            return None
        kind = "<U" if self.text_types[j] is str else "S"
        return chars.view(f"{kind}{chars.shape[1]}").reshape(len(chars))

    def __len__(self) -> int:
        return self._len

    def _dicts(self, columns: list[np.ndarray]) -> list[dict[str, Any]]:
        # Rows of 2-D columns are views of the column, read-only where it is Arrow's memory, as
        # Grain's rows are (pyarrow's to_numpy makes them views of the same values).
        return _dict_builder(len(self.names))(self.names, *columns)

    def rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Rows [start, stop) as Grain's elements ``{name: value}``, built without a Python loop
        per row."""
        return self._dicts([c[start:stop] for c in self.columns])

    def take(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        """The rows at ``indices`` (positions within the row group)."""
        return self._dicts([c[indices] for c in self.columns])


def stack_pieces(pieces: list[tuple[RowGroup, int, int]]) -> dict[str, np.ndarray]:
    """The batch of the rows ``group[start:stop]`` of each piece, in order: per column, the
    array the engine's stacking of those row dicts gives (numpy's promotion rules), made from
    whole column slices. Columns are those of the first piece."""
    first = pieces[0][0]
    batch = {}
    for j, name in enumerate(first.names):
        text = {group.text_types[j] for group, _, _ in pieces}
        if len(text) == 1 and None not in text:
            fixed = [group.fixed_width_text(j, start, stop) for group, start, stop in pieces]
            if all(f is not None for f in fixed):  # numpy's conversion of the values, made in C++
                batch[name] = np.concatenate(fixed) if len(fixed) > 1 else fixed[0]
                continue
        slices = [group.column(j)[start:stop] for group, start, stop in pieces]
        if all(s.dtype != object for s in slices):
            batch[name] = np.concatenate(slices) if len(slices) > 1 else slices[0].copy()
        elif len(text) == 1 and None not in text:
            # Only str (or only bytes): numpy's conversion gives what stacking gives (<U / S of
            # the longest value), ~15x faster than stacking the values one by one.
            batch[name] = (np.concatenate(slices) if len(slices) > 1 else slices[0]).astype(
                text.pop()
            )
        else:  # nullable strings and bytes, ragged lists: the engine's own stacking of the values
            try:
                batch[name] = _core.stack([v for s in slices for v in s])
            except ValueError as e:
                raise ValueError(f"Batch: column {name!r}: {e}") from e
    return batch


# Row groups decoded ahead of the reader, on a process-wide pool: pyarrow decodes without the
# GIL, so decoding overlaps the Python that consumes the previous row group.
_READ_AHEAD = 2
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _decode_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _pool  # pylint: disable=global-statement
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="spelt-parquet"
            )
        return _pool


class RowGroupReader:
    """Decoded row groups of one open ParquetFile, read in order: ``get(g)`` returns row group
    g and starts decoding the next ``_READ_AHEAD`` ones in the background. ``native``: the
    file's ``native_decoder`` or None. Errors of a background decode are raised by the ``get``
    of that row group. One thread at a time."""

    def __init__(self, file: Any, native: NativeDecoder | None = None):
        self.file = file
        self._native = native
        self._pending: dict[int, concurrent.futures.Future] = {}
        self._file_lock = threading.Lock()  # a ParquetFile reads one row group at a time

    def _decode(self, g: int) -> Any:
        with self._file_lock:
            return decode(self.file, self._native, g)

    def get(self, g: int) -> RowGroup:
        future = self._pending.pop(g, None)
        for stale in [k for k in self._pending if not g < k <= g + _READ_AHEAD]:
            self._pending.pop(stale).cancel()
        for k in range(g + 1, min(g + 1 + _READ_AHEAD, self.file.num_row_groups)):
            if k not in self._pending:
                self._pending[k] = _decode_pool().submit(self._decode, k)
        # Only the decode runs in the background; the conversion to numpy (which creates
        # Python objects, under the GIL) runs here, so that the threads do not contend for it.
        return to_row_group(self.file, future.result() if future is not None else self._decode(g))


def decode(file: Any, native: NativeDecoder | None, g: int) -> Any:
    """Row group g of ``file`` decoded, not yet converted (``to_row_group``): the columns that
    ``native`` (or None) decodes through it, the others as a ``pyarrow.Table``. Not thread-safe
    for one file."""
    if native is None:
        return file.read_row_group(g, use_threads=False)
    try:
        decoded = native.decoder.decode(g)
    except RuntimeError:  # corrupt data: pyarrow's read raises its own error, naming the cause
        return file.read_row_group(g, use_threads=False)
    done = decoded.decoded
    names = file.schema_arrow.names
    rest = [n for n, leaf in zip(names, native.leaves) if leaf is None or not done[leaf]]
    table = file.read_row_group(g, columns=rest, use_threads=False) if rest else None
    return native, decoded, table, file.metadata.row_group(g).num_rows


def to_row_group(file: Any, decoded: Any) -> RowGroup:
    """The RowGroup of what ``decode`` returned. Creates Python objects: call with the GIL
    free of contention (on the consuming thread)."""
    if isinstance(decoded, tuple):
        return RowGroup.from_decoded(file, *decoded)
    return RowGroup.from_table(decoded)
