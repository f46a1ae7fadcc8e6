"""Grain 0.2.18's ``grain.experimental.CacheIterDataset``
(grain/_src/python/dataset/transformations/cache.py), run by the engine (cpp/src/ops/cache.cc)."""

from __future__ import annotations

from spelt import _base
from spelt import _core


class CacheIterDataset(_base.ParentSpec, _base.IterDataset):
    """Keeps the elements each iterator reads from ``parent`` in memory: once the parent has
    ended, a restart of the iterator to its initial state (``RepeatIterDataset`` does one per
    epoch) reads the kept elements instead of the parent.

    State: ``{"parent": ..., "position": k, "cache_filled": bool}``. A state taken after the
    cache was filled, restored in a fresh iterator, re-reads the parent from the start up to
    ``position`` at the next ``next()`` (Grain's rule). Memory: one pass of the parent per
    iterator. The same element objects are returned on every pass.
    """

    def __init__(self, parent: _base.IterDataset):
        super().__init__(parent)
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.cache(self._stream_nodes()[0])

    def __str__(self) -> str:
        return f"CacheIterDataset(parent={self._parents[0]})"
