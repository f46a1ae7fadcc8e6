"""Grain's dataset options (``grain.experimental.DatasetOptions``, ``ExecutionTrackingMode``;
grain/_src/python/dataset/base.py): the same fields, defaults and merge rules (explicitly set
values win, the latest first). ``WithOptionsIterDataset`` sets them for a pipeline
(spelt/_base.py).

The engine enforces the filter thresholds (spelt/dataset_options.h): every filtering iterator
(an IterDataset ``filter``, and ``to_iter_dataset`` skipping what a MapDataset ``filter``
removed) counts skipped elements per window of 1000 and, at the end of a window, raises
ValueError or logs a warning (logger ``spelt.dataset_options``, at most once a minute) with
Grain's message when the skipped ratio reaches a threshold."""

from __future__ import annotations

import dataclasses
import enum
import logging
import math
import time
from typing import Generic, TypeVar

from spelt import _args

T = TypeVar("T")

_log = logging.getLogger(__name__)


# Seconds between two filter-threshold warnings in the process (Grain's
# _WARN_FILTERED_INTERVAL_SEC: absl's log_every_n_seconds).
WARN_INTERVAL_S = 60.0
_last_warning_s = -math.inf


def warn(message: str) -> None:
    """Logs a warning of the engine's filter-threshold check, at most one per WARN_INTERVAL_S
    (Grain logs it with absl at the same rate)."""
    global _last_warning_s  # pylint: disable=global-statement
    now = time.monotonic()
    if now - _last_warning_s >= WARN_INTERVAL_S:
        _last_warning_s = now
        _log.warning(message)


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
                if field.name.endswith("_ratio"):
                    _args.number_arg(value, f"DatasetOptions.{field.name}", optional=True)

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
            elif field.name in set_fields(other):
                merged[field.name] = getattr(other, field.name)
        return DatasetOptions(**merged)


def set_fields(options: DatasetOptions) -> frozenset[str]:
    """The names of the fields of ``options`` set explicitly (not defaults), which win when
    merged (Grain's ``_user_set_fields``)."""
    return frozenset(options._user_set_fields)  # pylint: disable=protected-access
