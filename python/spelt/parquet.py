"""``grain.experimental.ParquetIterDataset``: the rows of Parquet files as a stream.

Semantics of Grain 0.2.18 (grain/_src/python/dataset/sources/parquet_dataset.py): one element
per row, ``{column name: value}`` (see spelt/_parquet.py for the values); the state of one file
is ``{"row_group": g, "index_within_row_group": i}``, i rows of row group g consumed. After the
last row of a row group the state stays ``(g, len(g))``; the next ``next()`` moves on. Several
files are interleaved as Grain does (at most 16 at a time; InterleaveIterDataset's state).

``ds.batch(n)`` directly on a ParquetIterDataset (no per-row transformation in between) takes
the columnar path: each batch is cut from whole column arrays, with no Python per row, and
equals the batch of row dicts (same dict of stacked arrays, same states after every batch).
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from spelt import _parquet
from spelt import dataset
from spelt.transformations.interleave import InterleaveIterDataset

# Grain interleaves at most this many files at a time (parquet_dataset._CYCLE_LENGTH).
_CYCLE_LENGTH = 16
# Row dicts are built this many at a time (a whole row group of dicts could be large).
_ROWS_PER_BLOCK = 1024
# The keys of a file's state (Grain's).
_ROW_GROUP_KEY, _ROW_KEY = "row_group", "index_within_row_group"


def _check_state(state: Any) -> tuple[int, int]:
    if not isinstance(state, dict) or set(state) != {_ROW_GROUP_KEY, _ROW_KEY}:
        raise ValueError(
            "a ParquetIterDataset state is {'row_group': g, 'index_within_row_group': i},"
            f" got {state!r}"
        )
    g, i = state[_ROW_GROUP_KEY], state[_ROW_KEY]
    if not isinstance(g, int) or not isinstance(i, int) or g < 0 or i < 0:
        raise ValueError(f"state fields must be non-negative ints, got {state!r}")
    return g, i


class _FileCursor:
    """Position (row group g, row i within it) in one Parquet file, moved as Grain's iterator
    moves it. The file is opened at once; row group g is decoded when first needed."""

    def __init__(self, path: Any, read_kwargs: dict[str, Any]):
        self._path = path
        self._file = _parquet.open_file(path, read_kwargs)
        native = _parquet.native_decoder(path, self._file, read_kwargs)
        self._reader = _parquet.RowGroupReader(self._file, native)
        self.group: _parquet.RowGroup | None = None
        self.g, self.i = 0, 0

    def state(self) -> dict[str, int]:
        return {_ROW_GROUP_KEY: self.g, _ROW_KEY: self.i}

    def seek(self, g: int, i: int) -> None:
        self.g, self.i, self.group = g, i, None

    def _load(self) -> None:
        num_groups = self._file.num_row_groups
        if self.g >= max(num_groups, 1):
            raise ValueError(
                f"{self._path}: state row_group {self.g} out of range: the file has"
                f" {num_groups} row group(s)"
            )
        if num_groups == 0:
            self.group = _parquet.RowGroup.from_table(self._file.schema_arrow.empty_table())
        else:
            self.group = self._reader.get(self.g)

    def available(self) -> int:
        """Rows left in the current row group, moving to the next non-empty one when the
        current one is used up (as Grain's __next__ does); 0 at the end of the file."""
        if self.group is None:
            self._load()
        while self.i >= len(self.group):
            if self.g >= self._file.num_row_groups - 1:
                return 0
            self.g, self.i = self.g + 1, 0
            self._load()
        return len(self.group) - self.i


class _ParquetDatasetIterator(dataset.DatasetIterator):
    """Rows of one file as dicts; the state is the cursor's."""

    def __init__(self, path: Any, read_kwargs: dict[str, Any]):
        super().__init__()
        self._cursor = _FileCursor(path, read_kwargs)
        # The rows of a block of the cursor's row group not returned yet, and the index of the
        # row after the block (None when there is no block): the cursor's row index is synced
        # from them only when needed, so that next() does no bookkeeping per row.
        self._block: Iterator[dict[str, Any]] = iter(())
        self._block_end: int | None = None

    def __next__(self) -> dict[str, Any]:
        row = next(self._block, None)  # rows are dicts, never None
        return self._next_block() if row is None else row

    def _sync(self) -> _FileCursor:
        """The cursor, moved to the row after the last one returned."""
        if self._block_end is not None:
            self._cursor.i = self._block_end - operator.length_hint(self._block)
        return self._cursor

    def _next_block(self) -> dict[str, Any]:
        cursor = self._sync()
        self._block, self._block_end = iter(()), None
        if cursor.available() == 0:
            raise StopIteration
        rows = cursor.group.rows(cursor.i, cursor.i + _ROWS_PER_BLOCK)
        self._block, self._block_end = iter(rows), cursor.i + len(rows)
        return next(self._block)

    def get_state(self) -> dict[str, int]:
        return self._sync().state()

    def set_state(self, state: dict[str, Any]) -> None:
        g, i = _check_state(state)
        self._block, self._block_end = iter(()), None
        self._cursor.seek(g, i)

    def __str__(self) -> str:
        return f"ParquetDatasetIterator(path={self._cursor._path!r})"


class _ParquetBatchIterator(dataset.DatasetIterator):
    """Batches of ``batch_size`` rows cut from column arrays; the state is that of the row
    iterator after the batch's last row (Grain's BatchDatasetIterator passes it through)."""

    def __init__(self, path: Any, read_kwargs: dict[str, Any], batch_size: int, drop: bool):
        super().__init__()
        self._cursor = _FileCursor(path, read_kwargs)
        self._batch_size, self._drop_remainder = batch_size, drop

    def __next__(self) -> dict[str, np.ndarray]:
        cursor, pieces, needed = self._cursor, [], self._batch_size
        while needed:
            n = min(needed, cursor.available())
            if n == 0:
                break
            pieces.append((cursor.group, cursor.i, cursor.i + n))
            cursor.i += n
            needed -= n
        if not pieces or (needed and self._drop_remainder):
            raise StopIteration
        return _parquet.stack_pieces(pieces)

    def get_state(self) -> dict[str, int]:
        return self._cursor.state()

    def set_state(self, state: dict[str, Any]) -> None:
        self._cursor.seek(*_check_state(state))


class ParquetIterDataset(dataset.IterDataset):
    """The rows of one or more Parquet files (Grain's ``grain.experimental.ParquetIterDataset``).

    Args:
      path: a path or URI (anything ``pyarrow.parquet.ParquetFile`` opens, e.g. ``s3://...``),
        or a sequence of them; several files are interleaved, at most 16 read at a time.
      **read_kwargs: passed to ``pyarrow.parquet.ParquetFile``; ``filesystem=`` takes a
        pyarrow.fs or fsspec filesystem, and URIs without it open as the other sources'
        do (pyarrow.fs for s3, gs, hdfs, abfs; fsspec otherwise; docs/remote.md).

    Elements: ``{column: value}`` per row (numpy scalars, ``str``/``bytes``, numpy arrays for
    list columns), equal to Grain's. State (one file): ``{"row_group": g,
    "index_within_row_group": i}``; restores in any process. Files are opened lazily, by the
    iterator; FileNotFoundError / ValueError (not Parquet, corrupt footer) name the file.
    Needs pyarrow (``pip install 'spelt-ml[parquet]'``). An iterator is for one thread at a time.
    """

    def __init__(self, path: str | os.PathLike | Sequence[str | os.PathLike], **read_kwargs: Any):
        super().__init__()
        single = isinstance(path, (str, bytes, os.PathLike))
        self._paths = [os.fspath(path)] if single else [os.fspath(p) for p in path]
        self._read_kwargs = read_kwargs

    def __iter__(self) -> dataset.DatasetIterator:
        if len(self._paths) == 1:
            return _ParquetDatasetIterator(self._paths[0], self._read_kwargs)
        files = [ParquetIterDataset(p, **self._read_kwargs) for p in self._paths]
        return InterleaveIterDataset(files, cycle_length=_CYCLE_LENGTH).__iter__()

    def batch(
        self,
        batch_size: int,
        *,
        drop_remainder: bool = False,
        batch_fn: Callable[[Sequence[Any]], Any] | None = None,
    ) -> dataset.IterDataset:
        """Grain's ``batch``; on one file with the default ``batch_fn``, batches are cut from
        column arrays (no Python per row), equal to the batches of row dicts, same states."""
        if batch_fn is not None or len(self._paths) != 1:
            return super().batch(batch_size, drop_remainder=drop_remainder, batch_fn=batch_fn)
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        return _ParquetBatchIterDataset(self, batch_size, drop_remainder)

    def set_slice(self, sl: slice, sequential_slice: bool = False) -> None:
        """Keeps the files ``paths[sl]`` (Grain's sharding of a ParquetIterDataset)."""
        del sequential_slice
        self._paths = self._paths[sl]

    def __str__(self) -> str:
        return f"ParquetIterDataset(paths={self._paths!r})"


class _ParquetBatchIterDataset(dataset.IterDataset):
    """``ParquetIterDataset(...).batch(n)`` read column-wise (see the module docstring)."""

    def __init__(self, parent: ParquetIterDataset, batch_size: int, drop_remainder: bool):
        super().__init__(parent)
        self._batch_size, self._drop_remainder = batch_size, drop_remainder

    def __iter__(self) -> dataset.DatasetIterator:
        parent = self._parents[0]
        return _ParquetBatchIterator(
            parent._paths[0], parent._read_kwargs, self._batch_size, self._drop_remainder
        )

    def __str__(self) -> str:
        return (
            f"BatchIterDataset(batch_size={self._batch_size},"
            f" drop_remainder={self._drop_remainder})"
        )
