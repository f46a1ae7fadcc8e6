"""Grain's ``grain.experimental.LimitIterDataset``
(grain/_src/python/dataset/transformations/limit.py at 0.2.18), run by cpp/src/ops/limit.cc."""

from __future__ import annotations

from spelt import _args
from spelt import _base


class LimitIterDataset(_base.ParentSpec, _base.IterDataset):
    """The first ``count`` elements of ``parent``. State: ``{"parent", "count_elements_read"}``.
    ValueError if count <= 0 (Grain's message)."""

    def __init__(self, parent: _base.IterDataset, count: int):
        super().__init__(parent)
        self._count = _args.int_arg(count, "count")
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._stream_nodes()[0].limit(_args.clamped(self._count))

    def __str__(self) -> str:
        return f"LimitIterDataset(count={self._count})"
