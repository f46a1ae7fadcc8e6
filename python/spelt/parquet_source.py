"""``ParquetDataSource``: random access to the rows of Parquet files, by global row index.

A Spelt addition (Grain 0.2.18 reads Parquet only as a stream): a RandomAccessDataSource for
``MapDataset.source`` and ``DataLoader(data_source=...)``, so Parquet data gets a global
shuffle, sharding and worker processes. Built from the files' footers (row-group sizes), it
decodes whole row groups and keeps the last few decoded, so reads in order or in chunks that
share row groups decode each group once. A global shuffle over files whose row groups do not
fit the cache decodes a row group per element read: prefer row groups of a few thousand rows.
"""

from __future__ import annotations

import collections
import operator
import os
import threading
from collections.abc import Sequence
from typing import Any, SupportsIndex

import numpy as np

from spelt import _parquet


class ParquetDataSource:
    """The rows of Parquet files, in file order, as ``{column: value}`` dicts (the elements
    of ParquetIterDataset, equal to Grain's).

    Args:
      paths: a path or URI (anything ``pyarrow.parquet.ParquetFile`` opens), or a sequence of
        them; all files must have the same Arrow schema.
      cache_row_groups: how many decoded row groups to keep (per process).
      **read_kwargs: passed to ``pyarrow.parquet.ParquetFile``; ``filesystem=`` takes a
        pyarrow.fs or fsspec filesystem, and URIs without it open as the other sources'
        do (pyarrow.fs for s3, gs, hdfs, abfs; fsspec otherwise; docs/remote.md).

    Raises FileNotFoundError / ValueError naming the file for a missing file, a file that is
    not Parquet (corrupt footer) or a schema that differs from the first file's. ``__getitem__``
    raises IndexError outside [0, len). Thread-safe; picklable (open files and the cache are not
    pickled, so worker processes open their own). ``repr`` is stable (it names the paths).
    """

    def __init__(
        self,
        paths: str | os.PathLike | Sequence[str | os.PathLike],
        *,
        cache_row_groups: int = 8,
        **read_kwargs: Any,
    ):
        single = isinstance(paths, (str, bytes, os.PathLike))
        self._paths = [os.fspath(paths)] if single else [os.fspath(p) for p in paths]
        if not self._paths:
            raise ValueError("ParquetDataSource: no paths given")
        if cache_row_groups < 1:
            raise ValueError(f"cache_row_groups must be at least 1, got {cache_row_groups}")
        self._cache_size = cache_row_groups
        self._read_kwargs = read_kwargs
        files = _parquet.open_files(self._paths, read_kwargs)
        self._groups: list[tuple[int, int]] = []  # (file index, row group) of each row group
        sizes = []
        for f, pf in enumerate(files):
            for g in range(pf.num_row_groups):
                self._groups.append((f, g))
                sizes.append(pf.metadata.row_group(g).num_rows)
        self._schema = files[0].schema_arrow
        # Row index where each row group starts; the last entry is the number of rows.
        self._starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self._init_process_state(files)

    def _init_process_state(self, files: list[Any] | None) -> None:
        self._files = files or [None] * len(self._paths)
        # Per file, once opened in this process: its _parquet.native_decoder (or None).
        self._natives: dict[int, _parquet.NativeDecoder | None] = {}
        self._cache: collections.OrderedDict[int, _parquet.RowGroup] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for key in ("_files", "_natives", "_cache", "_lock"):
            del state[key]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_process_state(None)

    @property
    def schema(self) -> Any:
        """The files' ``pyarrow.Schema``."""
        return self._schema

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __repr__(self) -> str:
        return f"ParquetDataSource(paths={self._paths!r})"

    def _row_group(self, group: int) -> _parquet.RowGroup:
        with self._lock:
            decoded = self._cache.get(group)
            if decoded is not None:
                self._cache.move_to_end(group)
                return decoded
            f, g = self._groups[group]
            if self._files[f] is None:
                self._files[f] = _parquet.open_file(self._paths[f], self._read_kwargs)
            file = self._files[f]
            if f not in self._natives:
                self._natives[f] = _parquet.native_decoder(self._paths[f], file, self._read_kwargs)
            decoded = _parquet.to_row_group(file, _parquet.decode(file, self._natives[f], g))
            self._cache[group] = decoded
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return decoded

    def _check(self, index: SupportsIndex) -> int:
        i = operator.index(index)
        if not 0 <= i < len(self):
            raise IndexError(f"index {i} out of range for a ParquetDataSource of {len(self)} rows")
        return i

    def __getitem__(self, record_key: SupportsIndex) -> dict[str, Any]:
        return self.__getitems__([record_key])[0]

    def __getitems__(self, record_keys: Sequence[SupportsIndex]) -> list[dict[str, Any]]:
        """The rows at ``record_keys``, in order; each row group involved is decoded once."""
        keys = np.fromiter((self._check(k) for k in record_keys), np.int64, len(record_keys))
        groups = np.searchsorted(self._starts, keys, side="right") - 1
        out: list[Any] = [None] * len(keys)
        for group in dict.fromkeys(groups.tolist()):  # in order of first use
            where = np.flatnonzero(groups == group)
            rows = self._row_group(group).take(keys[where] - self._starts[group])
            for position, row in zip(where.tolist(), rows):
                out[position] = row
        return out
