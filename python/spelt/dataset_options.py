"""Grain's dataset options (``grain.experimental.DatasetOptions``, ``ExecutionTrackingMode``,
``WithOptionsIterDataset``; grain/_src/python/dataset/base.py and dataset.py): the same
fields, defaults and merge rules (explicitly set values win, the latest first)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Generic, TypeVar

from spelt import dataset

T = TypeVar("T")


class ExecutionTrackingMode(enum.Enum):
    """DISABLED (default) or STAGE_TIMING (per-stage timing, as in Grain)."""

    DISABLED = enum.auto()
    STAGE_TIMING = enum.auto()


@dataclasses.dataclass(slots=True, frozen=True)
class _Default(Generic[T]):
    value: T


@dataclasses.dataclass(kw_only=True, frozen=True)
class DatasetOptions:
    """Options of a pipeline (Grain's). ``filter_warn_threshold_ratio`` (default 0.9) and
    ``filter_raise_threshold_ratio`` (default None): ratios of filtered-out elements per window
    of 1000 above which a filter warns or raises; None disables the check.
    ``execution_tracking_mode``; ``min_shm_size`` (bytes)."""

    filter_warn_threshold_ratio: float | None | _Default[float] = _Default(0.9)
    filter_raise_threshold_ratio: float | None | _Default[None] = _Default(None)
    execution_tracking_mode: ExecutionTrackingMode | _Default[ExecutionTrackingMode] = _Default(
        ExecutionTrackingMode.DISABLED
    )
    min_shm_size: int | _Default[int] = _Default(0)
    _user_set_fields: set[str] = dataclasses.field(default_factory=set, init=False)

    def __post_init__(self):
        for field in dataclasses.fields(DatasetOptions):
            value = getattr(self, field.name)
            if isinstance(value, _Default):
                object.__setattr__(self, field.name, value.value)
            elif field.init:
                self._user_set_fields.add(field.name)

    def merge(self, other: DatasetOptions | None) -> DatasetOptions:
        """These options over ``other``: fields set explicitly here win, then those set in
        ``other``, then the defaults."""
        if other is None:
            return self
        merged = {}
        for field in dataclasses.fields(DatasetOptions):
            if not field.init:
                continue
            if field.name in self._user_set_fields:
                merged[field.name] = getattr(self, field.name)
            elif field.name in other._user_set_fields:
                merged[field.name] = getattr(other, field.name)
        return DatasetOptions(**merged)


class WithOptionsIterDataset(dataset.IterDataset):
    """``parent`` with ``options`` for the whole pipeline (merged with options set further
    down; the latest set value wins). Output and state are the parent's."""

    def __init__(self, parent: dataset.IterDataset, options: DatasetOptions):
        super().__init__(parent)
        self.options = options

    def _make_node(self):
        return self._parents[0]._node

    @property
    def merged_options(self) -> DatasetOptions:
        """These options merged with those of the WithOptionsIterDatasets below."""
        result = self.options
        to_visit: list[Any] = list(self.parents)
        while to_visit:
            ds = to_visit.pop(0)
            if isinstance(ds, WithOptionsIterDataset):
                result = result.merge(ds.options)
            to_visit.extend(getattr(ds, "parents", ()))
        return result

    def __str__(self) -> str:
        return f"WithOptionsIterDataset(options={self.options})"
