"""Grain's ``grain.experimental.FlatMapMapDataset``
(grain/_src/python/dataset/transformations/flatmap.py at 0.2.18): a face over the engine op
cpp/src/ops/flat_map_map.cc; only ``transform.flat_map`` runs in Python."""

from __future__ import annotations

from spelt import dataset
from spelt import transforms


class FlatMapMapDataset(dataset.MapDataset):
    """Splits each element of ``parent`` into at most ``transform.max_fan_out`` elements, at
    fixed slots: element ``i`` is output ``i % max_fan_out`` of
    ``transform.flat_map(parent[i // max_fan_out])``, None (skipped by ``to_iter_dataset``)
    past the last output. ``len`` is ``max_fan_out * len(parent)`` (sys.maxsize for an
    infinite parent). Reading a chunk calls ``flat_map`` once per parent element.

    ValueError (Grain's message) when ``flat_map`` returns more than ``max_fan_out``
    elements; ValueError if ``max_fan_out <= 0``; TypeError if ``transform`` is not a
    ``FlatMap``. ``MapDataset.batch`` cannot follow it (ValueError, as in Grain).
    """

    def __init__(self, parent: dataset.MapDataset, transform: transforms.FlatMap):
        super().__init__(parent)
        if not hasattr(transform, "flat_map") or not hasattr(transform, "max_fan_out"):
            raise TypeError(
                "FlatMapMapDataset needs a FlatMap transform (flat_map and max_fan_out),"
                f" got {type(transform).__name__}"
            )
        self._transform = transform
        self._node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._parents[0]._node.flat_map(
            self._transform.flat_map, self._transform.max_fan_out
        )

    def __str__(self) -> str:
        return (
            f"FlatMapMapDataset(transform={transforms.get_pretty_transform_name(self._transform)})"
        )
