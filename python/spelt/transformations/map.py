"""``map``, ``random_map`` and ``map_with_index`` on a MapDataset (per global index) and on an
IterDataset (per element read); Grain's map.py
(grain/_src/python/dataset/transformations/map.py at 0.2.18). The engine calls the user's
function (cpp/src/ops/map.cc, iter_map.cc) with the GIL held; Args: (fn,) or (fn, seed words)."""

from __future__ import annotations

from spelt import _base
from spelt import _core
from spelt import _index_plan


class MapMapDataset(_base.TransformSpec, _base.OpMapDataset):
    _build = staticmethod(_core.MapDataset.map)


class RandomMapMapDataset(_base.TransformSpec, _base.OpMapDataset):
    _build = staticmethod(_core.MapDataset.random_map)


class MapWithIndexMapDataset(_base.TransformSpec, _base.OpMapDataset):
    _build = staticmethod(_core.MapDataset.map_with_index)


class MapIterDataset(_index_plan.SameIndex, _base.TransformSpec, _base.OpIterDataset):
    """State: the parent's."""

    _build = staticmethod(_core.IterDataset.map)


class RandomMapIterDataset(_index_plan.RngCount, _base.TransformSpec, _base.OpIterDataset):
    """State: ``{"parent", "index_for_rng"}`` (Grain's)."""

    _build = staticmethod(_core.IterDataset.random_map)


class MapWithIndexIterDataset(_index_plan.Counter, _base.TransformSpec, _base.OpIterDataset):
    """State: ``{"parent", "counter"}`` (Grain's)."""

    _build = staticmethod(_core.IterDataset.map_with_index)
