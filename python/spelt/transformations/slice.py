"""``MapDataset.slice`` and ``ds[start:stop:step]`` (Grain's SliceMapDataset,
grain/_src/python/dataset/transformations/slice.py): a Python slice of one epoch; later epochs
read the same positions of later epochs (cpp/src/ops/slice.cc)."""

from __future__ import annotations

import builtins

from spelt import _base
from spelt import _core


class SliceMapDataset(_base.ParentSpec, _base.OpMapDataset):
    """Args: (start, stop, step), each an int or None, clamped to int64."""

    _build = staticmethod(_core.MapDataset.slice)

    def __str__(self) -> str:
        start, stop, step = builtins.slice(*self.args).indices(len(self._parents[0]))
        return f"SliceMapDataset[{start}:{stop}:{step}]"
