"""Data sources (Grain's ``grain.sources``).

Any object with ``__len__`` and ``__getitem__(int)`` is a RandomAccessDataSource (a list, a
numpy array, a TFDS or Hugging Face data source, ...). Its ``repr`` is stored in DataLoader
checkpoints to detect a changed source, so it should be stable.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, SupportsIndex, runtime_checkable


@runtime_checkable
class RandomAccessDataSource(Protocol):
  """Protocol: ``__len__() -> int`` and ``__getitem__(index) -> record``."""

  def __len__(self) -> int:
    ...

  def __getitem__(self, record_key: SupportsIndex) -> Any:
    ...


class RangeDataSource:
  """The ints start, start + step, ... below stop (Grain's RangeDataSource).

  All three arguments are required; len = ceil((stop - start) / step), at least 0.
  Raises ValueError if step == 0, IndexError for an index outside [0, len).
  """

  def __init__(self, start: int, stop: int, step: int):
    if step == 0:
      raise ValueError("step must not be zero")
    self._start = start
    self._stop = stop
    self._step = step
    self._len = max(0, math.ceil((stop - start) / step))

  def __len__(self) -> int:
    return self._len

  def __getitem__(self, record_key: SupportsIndex) -> int:
    i = record_key.__index__()
    if i < 0 or i >= self._len:
      raise IndexError(f"RangeDataSource index {i} out of range [0, {self._len})")
    return self._start + i * self._step

  def __repr__(self) -> str:
    return f"RangeDataSource(start={self._start}, stop={self._stop}, step={self._step})"


from spelt.array_record import ArrayRecordDataSource  # pylint: disable=g-import-not-at-top

__all__ = ["ArrayRecordDataSource", "RandomAccessDataSource", "RangeDataSource"]
