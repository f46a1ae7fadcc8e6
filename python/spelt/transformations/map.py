"""``map``, ``random_map`` and ``map_with_index`` on a MapDataset (per global index) and on an
IterDataset (per element read); Grain's map.py
(grain/_src/python/dataset/transformations/map.py at 0.2.18). The engine calls the user's
function (cpp/src/ops/map.cc, iter_map.cc) with the GIL held; Args: (fn,) or (fn, seed words).

A transform that answers ``_spelt_image_op()`` with an op (spelt.vision's, docs/vision.md) runs
natively instead: the engine calls its C++ kernel (spelt/image_ops.h) concurrently on its
threads, without the GIL. Where the ``map`` directly below such an op is a DecodeImage on the
same field, that decode is rebuilt, at the same place in the engine tree (so default seeds
derive as before), to hand the JPEG on undecoded, and the op decodes only what it needs
(``fuses_decode``: RandomResizedCrop, Resize).
"""

from __future__ import annotations

from typing import Any

from spelt import _base
from spelt import _callables
from spelt import _core


def _transform(ds: Any) -> Any:
    return _callables.transform_of(ds.args[0])


def _image_op(ds: Any, **options: Any) -> Any:
    """The native image op of a map dataset's transform, or None."""
    method = getattr(_transform(ds), "_spelt_image_op", None)
    return method(**options) if method is not None else None


class _ImageOps:
    """Builds the engine node from native image ops where the transform has one."""

    _image_build: Any  # _core method: (parent node, ops, *self.args[1:]) -> node
    _joins: str  # the class name of the maps whose decode it fuses
    _join_build: Any  # _core method that builds those maps' image nodes

    def _make_node(self):
        op = _image_op(self)
        if op is None:
            return super()._make_node()
        parent = self.parents[0]
        parent_node = parent.engine_node
        transform = _transform(self)
        if (
            getattr(transform, "fuses_decode", False)
            and type(parent).__name__ == self._joins
            and type(parent).__module__ == __name__
        ):
            below = _transform(parent)
            deferred = (
                _image_op(parent, defer_decode=True)
                if getattr(below, "defers_decode", False)
                else None
            )
            if deferred is not None and below.field == transform.field:
                parent_node = self._join_build(parent.parents[0].engine_node, [deferred])
        return self._image_build(parent_node, [op], *self.args[1:])


class MapMapDataset(_ImageOps, _base.TransformSpec, _base.OpMapDataset):
    _build = staticmethod(_core.MapDataset.map)
    _image_build = staticmethod(_core.MapDataset.image_map)
    _joins = "MapMapDataset"
    _join_build = staticmethod(_core.MapDataset.image_map)


class RandomMapMapDataset(_ImageOps, _base.TransformSpec, _base.OpMapDataset):
    _build = staticmethod(_core.MapDataset.random_map)
    _image_build = staticmethod(_core.MapDataset.image_random_map)
    _joins = "MapMapDataset"
    _join_build = staticmethod(_core.MapDataset.image_map)


class MapWithIndexMapDataset(_base.TransformSpec, _base.OpMapDataset):
    """A transform may build its own engine node (``_spelt_native_node(parent node)``, or None
    to run as Python): the DataLoader's per-record operations do when all are image ops."""

    _build = staticmethod(_core.MapDataset.map_with_index)

    def _make_node(self):
        method = getattr(_transform(self), "_spelt_native_node", None)
        node = method(self.parents[0].engine_node) if method is not None else None
        return node if node is not None else super()._make_node()


class MapIterDataset(_ImageOps, _base.TransformSpec, _base.OpIterDataset):
    """State: the parent's."""

    _build = staticmethod(_core.IterDataset.map)
    _image_build = staticmethod(_core.IterDataset.image_map)
    _joins = "MapIterDataset"
    _join_build = staticmethod(_core.IterDataset.image_map)


class RandomMapIterDataset(_ImageOps, _base.TransformSpec, _base.OpIterDataset):
    """State: ``{"parent", "index_for_rng"}`` (Grain's)."""

    _build = staticmethod(_core.IterDataset.random_map)
    _image_build = staticmethod(_core.IterDataset.image_random_map)
    _joins = "MapIterDataset"
    _join_build = staticmethod(_core.IterDataset.image_map)


class MapWithIndexIterDataset(_base.TransformSpec, _base.OpIterDataset):
    """State: ``{"parent", "counter"}`` (Grain's)."""

    _build = staticmethod(_core.IterDataset.map_with_index)
