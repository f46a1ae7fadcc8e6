"""Data sources (Grain's ``grain.sources``).

Any object with ``__len__`` and ``__getitem__(int)`` is a RandomAccessDataSource (a list, a
numpy array, a TFDS or Hugging Face data source, ...). Its ``repr`` is stored in DataLoader
checkpoints to detect a changed source, so it should be stable.
"""

from __future__ import annotations

import operator
from typing import Any, Protocol, SupportsIndex, runtime_checkable

from spelt import _core


@runtime_checkable
class RandomAccessDataSource(Protocol):
    """Protocol: ``__len__() -> int`` and ``__getitem__(index) -> record``."""

    def __len__(self) -> int: ...

    def __getitem__(self, record_key: SupportsIndex) -> Any: ...


class RangeDataSource:
    """The ints start, start + step, ... below stop (Grain's RangeDataSource).

    A face over the engine's RangeSource (spelt/source.h), which pipelines read in C++ without
    the GIL. All three arguments are required ints (64-bit); len = ceil((stop - start) / step),
    at least 0. Raises ValueError if step == 0 (Grain: AssertionError), IndexError for an index
    outside [0, len) (negative indices included, as in Grain). Same repr as Grain's; pickles as
    its arguments.
    """

    def __init__(self, start: int, stop: int, step: int):
        self._source = _core.range_source(start, stop, step)
        self._start = start
        self._stop = stop
        self._step = step

    def __len__(self) -> int:
        return len(self._source)

    def __getitem__(self, record_key: SupportsIndex) -> int:
        return self._source[operator.index(record_key)]

    def __repr__(self) -> str:
        return repr(self._source)

    def __reduce__(self):
        return type(self), (self._start, self._stop, self._step)

    def _spelt_native_source(self) -> _core.NativeSource:
        """The engine source (see spelt.transformations.source.native_or_python)."""
        return self._source


from spelt.array_record import ArrayRecordDataSource  # pylint: disable=g-import-not-at-top
from spelt.shared_memory import SharedMemoryDataSource  # pylint: disable=g-import-not-at-top

__all__ = [
    "ArrayRecordDataSource",
    "RandomAccessDataSource",
    "RangeDataSource",
    "SharedMemoryDataSource",
]
