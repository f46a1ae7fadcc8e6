"""Grain's ``grain.experimental.ZipMapDataset`` and ``ZipIterDataset``
(grain/_src/python/dataset/transformations/zip.py at 0.2.18), run by cpp/src/ops/zip.cc."""

from __future__ import annotations

from typing import Any, Sequence

from spelt import _args
from spelt import _base
from spelt import _core
from spelt import element_spec


class ZipMapDataset(_base.MapDataset):
    """Element i is the tuple of the parents' elements i (None for a filtered one).
    ValueError if there are no parents or their lengths differ (Grain's messages)."""

    def __init__(self, parents: Sequence[_base.MapDataset]):
        super().__init__(_args.datasets_arg(parents, (_base.MapDataset,), "ZipMapDataset"))
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.zip([p.engine_node for p in self._parents])

    @property
    def _element_spec(self) -> Any:
        return tuple(element_spec.get_element_spec(p) for p in self._parents)

    def __str__(self) -> str:
        return f"ZipMapDataset(parents={self._parents}"  # Grain's text: a tuple, no ")"


class ZipIterDataset(_base.IterDataset):
    """Tuples of the parents' next elements. With ``strict`` (default), parents of different
    lengths raise ValueError at the end (Grain's message). State: ``{"parents": [...]}``."""

    def __init__(self, parents: Sequence[_base.IterDataset], *, strict: bool = True):
        kinds = (_base.IterDataset, _base.MapDataset)
        super().__init__(_args.datasets_arg(parents, kinds, "ZipIterDataset"))
        self._strict = bool(strict)
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.zip_iter(self._stream_nodes(), self._strict)

    @property
    def _element_spec(self) -> Any:
        return tuple(element_spec.get_element_spec(p) for p in self._parents)

    def __str__(self) -> str:
        return f"ZipIterDataset(parents={self._parents}, strict={self._strict})"  # a tuple
