"""Shuffles: ``MapDataset.shuffle`` (global, cpp/src/ops/shuffle.cc) and Grain's window
shuffles (``grain.experimental.WindowShuffleMapDataset`` and ``WindowShuffleIterDataset``,
cpp/src/ops/window_shuffle.cc); grain/_src/python/dataset/transformations/shuffle.py at 0.2.18.
The engine does the per-element work."""

from __future__ import annotations

from spelt import _args
from spelt import _base
from spelt import _core


class ShuffleMapDataset(_base.ParentSpec, _base.OpMapDataset):
    """``MapDataset.shuffle(seed)``: epoch e is permuted by Grain's index_shuffle with seed
    ``seed + e``. Args: (seed,), already resolved (``_args.resolve_seed``)."""

    _build = staticmethod(_core.MapDataset.shuffle)


def _window_size(window_size: int) -> int:
    return _args.int_arg(window_size, "window_size")


class WindowShuffleMapDataset(_base.ParentSpec, _base.MapDataset):
    """Shuffles ``parent`` within consecutive windows of ``window_size`` indices: window ``w``
    (counted from the first index, across epochs) is permuted by ``index_shuffle`` with seed
    ``seed + w`` (mod 2**32), so each index maps to exactly one index of its window. Same length
    as the parent; thread-safe.

    Unlike Grain, the last window of an epoch holds just the remaining indices (Grain's reads
    past the end of the epoch, duplicating and losing elements), so every epoch is a
    permutation; where ``len(parent)`` is a multiple of ``window_size`` the outputs equal
    Grain's. ValueError if ``window_size <= 0`` or ``seed`` is outside [0, 2**32); TypeError
    if either is not an int.
    """

    def __init__(self, parent: _base.MapDataset, *, window_size: int, seed: int):
        super().__init__(parent)
        self._window_size = _window_size(window_size)
        self._seed = _args.clamped(_args.int_arg(seed, "WindowShuffleMapDataset: seed"))
        self.engine_node  # argument errors surface here  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._parents[0].engine_node.window_shuffle(self._window_size, self._seed)

    def __str__(self) -> str:
        return "WindowShuffleMapDataset"


class WindowShuffleIterDataset(_base.ParentSpec, _base.IterDataset):
    """Reads ``window_size`` elements of ``parent`` at a time and returns them shuffled, window
    ``w`` by ``index_shuffle`` with seed ``seed + w`` (mod 2**32), in Grain's order (the last
    window holds what is left). Memory: one window of elements.

    State (Grain's): ``{"parent_window_start_state": parent state before the window,
    "window_index": w, "pos_in_window": k}``. Restoring, in this or a fresh iterator, re-reads
    the window from that parent state, reshuffles it with its own seed and skips the first k
    elements (grain#1179). ValueError if ``window_size <= 0`` or ``seed`` is outside
    [0, 2**32); TypeError if either is not an int.
    """

    def __init__(self, parent: _base.IterDataset, *, window_size: int, seed: int):
        super().__init__(parent)
        self._window_size = _window_size(window_size)
        self._seed = _args.clamped(_args.int_arg(seed, "WindowShuffleIterDataset: seed"))
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._stream_nodes()[0].window_shuffle(self._window_size, self._seed)

    def __str__(self) -> str:
        return "WindowShuffleIterDataset"
