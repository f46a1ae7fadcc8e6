"""Grain's ``grain.experimental.FlatMapMapDataset`` and ``FlatMapIterDataset``
(grain/_src/python/dataset/transformations/flatmap.py at 0.2.18): faces over the engine ops
cpp/src/ops/flat_map.cc and iter_flat_map.cc; only ``transform.flat_map`` runs in Python."""

from __future__ import annotations

from spelt import _base
from spelt import _callables
from spelt import transforms


class FlatMapMapDataset(_base.MapDataset):
    """Splits each element of ``parent`` into at most ``transform.max_fan_out`` elements, at
    fixed slots: element ``i`` is output ``i % max_fan_out`` of
    ``transform.flat_map(parent[i // max_fan_out])``, None (skipped by ``to_iter_dataset``)
    past the last output. ``len`` is ``max_fan_out * len(parent)`` (sys.maxsize for an
    infinite parent). Reading a chunk calls ``flat_map`` once per parent element.

    ValueError (Grain's message) when ``flat_map`` returns more than ``max_fan_out``
    elements; ValueError if ``max_fan_out <= 0``; TypeError if ``transform`` is not a
    ``FlatMap``. ``MapDataset.batch`` cannot follow it (ValueError, as in Grain).
    """

    def __init__(self, parent: _base.MapDataset, transform: transforms.FlatMap):
        super().__init__(parent)
        if not hasattr(transform, "flat_map") or not hasattr(transform, "max_fan_out"):
            raise TypeError(
                "FlatMapMapDataset needs a FlatMap transform (flat_map and max_fan_out),"
                f" got {type(transform).__name__}"
            )
        self._transform = transform
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._parents[0].engine_node.flat_map(
            self._transform.flat_map, self._transform.max_fan_out
        )

    def __str__(self) -> str:
        return (
            f"FlatMapMapDataset(transform={transforms.get_pretty_transform_name(self._transform)})"
        )


class FlatMapIterDataset(_base.IterDataset):
    """Each element becomes the elements of ``transform.flat_map(element)`` (Grain's
    ``grain.experimental.FlatMapIterDataset``). State: parent state + position in the split."""

    def __init__(self, parent: _base.IterDataset, transform: transforms.FlatMap):
        super().__init__(parent)
        _callables.flat_map_fn(transform)  # TypeError here, not at iteration
        self._transform = transform

    def _make_node(self):
        return self._stream_nodes()[0].flat_map(_callables.flat_map_fn(self._transform))

    def __str__(self) -> str:
        return (
            f"FlatMapIterDataset(transform={transforms.get_pretty_transform_name(self._transform)})"
        )
