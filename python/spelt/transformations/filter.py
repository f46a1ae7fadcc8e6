"""``filter`` on a MapDataset (dropped elements become None at their index) and on an
IterDataset (skipped); Grain's filter.py
(grain/_src/python/dataset/transformations/filter.py at 0.2.18). The engine checks the filter
thresholds of the pipeline's DatasetOptions (cpp/src/ops/filter.cc)."""

from __future__ import annotations

from typing import Any, Callable

from spelt import _base
from spelt import _callables
from spelt import _core


class FilterMapDataset(_base.TransformStr, _base.ParentSpec, _base.OpMapDataset):
    """Args: (predicate,)."""

    _build = staticmethod(_core.MapDataset.filter)


class FilterIterDataset(_base.TransformStr, _base.ParentSpec, _base.OpIterDataset):
    """Args: (predicate, its name as Grain names it in the filter-threshold messages)."""

    _build = staticmethod(_core.IterDataset.filter)

    def __init__(self, parent: _base.IterDataset, fn: Callable[[Any], bool]):
        super().__init__(parent, fn, _callables.filter_name(fn))
