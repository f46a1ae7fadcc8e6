"""``MapDataset.slice`` and ``ds[start:stop:step]`` (Grain's SliceMapDataset,
grain/_src/python/dataset/transformations/slice.py), and ``MapDataset.slice(indices)`` with a
sequence of indices (Grain's ReindexMapDataset, upstream 1a709b1). Both are fixed subsets:
every epoch of them reads the same parent indices, those of the parent's first epoch
(cpp/src/ops/slice.cc, cpp/src/ops/reindex.cc; docs/compatibility.md)."""

from __future__ import annotations

import builtins
import operator
import sys
from typing import Any, Sequence

import numpy as np

from spelt import _args
from spelt import _base
from spelt import _core


class SliceMapDataset(_base.ParentSpec, _base.OpMapDataset):
    """Args: (start, stop, step), each an int or None, clamped to int64."""

    _build = staticmethod(_core.MapDataset.slice)

    def __str__(self) -> str:
        start, stop, step = builtins.slice(*self.args).indices(len(self._parents[0]))
        return f"SliceMapDataset[{start}:{stop}:{step}]"


class ReindexMapDataset(_base.ParentSpec, _base.OpMapDataset):
    """``parent`` read at ``indices``: element k is ``parent[indices[k % len(indices)]]``.

    Args:
        parent: the MapDataset to read.
        indices: a sequence of ints (list, tuple, range, a 1-D integer numpy array, or a
            MapDataset of ints, read once here). A negative index reads an earlier epoch of the
            parent, as ``parent[i]`` does (-1: the last element of epoch -1); an index >=
            ``len(parent)`` reads a later epoch of the parent, as ``parent[i]`` does. Indices
            may repeat.

    ``len()`` is ``len(indices)``; the element spec is the parent's. Later epochs (``ds[k]``
    for ``k >= len(ds)``, ``repeat``) read the same parent indices again, as Spelt's slices do
    (upstream Grain reads ``indices[k % n] + (k // n) * len(parent)``). The indices are kept as
    one int64 array (8 bytes each), and a chunk of elements is one batched read of the parent.

    Raises:
        ValueError: ``indices`` is not a sequence (or is a string), or is an infinite
            MapDataset.
        TypeError: ``indices`` is a boolean mask, is not 1-D, or holds something that is not
            an int (naming its position).
        IndexError: an index beyond the int64 range, or a negative one that the parent
            cannot address (an empty or infinite parent), naming its position.
    """

    _build = staticmethod(_core.MapDataset.reindex)

    def __init__(self, parent: _base.MapDataset, indices: Sequence[int]):
        array = _index_array(indices)
        # Grain's str(): the indices as given, or their first and last two.
        self._indices_str = (
            str(indices)
            if len(array) <= 5
            else f"[{array[0]}, {array[1]}, ..., {array[-2]}, {array[-1]}]"
        )
        for position in np.flatnonzero(array < 0):  # an earlier epoch, as parent[i] reads it
            index = int(array[position])
            try:
                array[position] = _base.global_index(index, len(parent))
            except IndexError as e:
                raise IndexError(f"slice: index {index} at position {position}: {e}") from None
        super().__init__(parent, array)

    def __str__(self) -> str:  # Grain's
        return f"ReindexMapDataset(indices={self._indices_str}, len={len(self)})"


def _index_array(indices: Any) -> np.ndarray:
    """``indices`` as a 1-D C-contiguous int64 array; errors as ReindexMapDataset's."""
    if isinstance(indices, _base.MapDataset):
        if len(indices) >= sys.maxsize:
            raise ValueError(
                "slice: a MapDataset of indices must be finite (it is read once, at the call),"
                f" got an infinite one: {indices}"
            )
        indices = indices.engine_node.get_many(list(builtins.range(len(indices))))
    elif isinstance(indices, (str, bytes, bytearray)) or not hasattr(indices, "__len__"):
        # Grain's ValueError and message for a non-slice, and what else slice() takes
        raise ValueError(
            f"sl is not a slice: {type(indices)} (nor a sequence of ints: a list, a 1-D"
            " integer array, a MapDataset of ints)"
        )
    array = indices if isinstance(indices, np.ndarray) else np.asarray(indices)
    if array.dtype.kind == "b":
        raise TypeError(
            "slice: indices are booleans; a boolean mask is not supported, pass"
            " np.flatnonzero(mask) for the indices where it is True"
        )
    if array.ndim != 1:
        raise TypeError(f"slice: indices must be 1-D, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind == "i" or (array.dtype.kind == "u" and array.max() <= _args.MAX_INDEX):
        # A copy: the caller's array may change later, and the dataset is rebuilt from this one
        # where it is unpickled (worker processes).
        return np.array(array, dtype=np.int64, order="C")
    # Not all ints to numpy (floats, None, strings, mixed with ints beyond int64): check each,
    # so that the error names the position and nothing is rounded.
    checked = []
    for position, value in enumerate(indices):
        try:
            index = operator.index(value)
        except TypeError:
            raise TypeError(
                f"slice: index at position {position} is not an int: {value!r}"
                f" ({type(value).__name__})"
            ) from None
        if not -_args.MAX_INDEX - 1 <= index <= _args.MAX_INDEX:
            raise IndexError(
                f"slice: index {index} at position {position} is beyond the engine's int64 indices"
            )
        checked.append(index)
    return np.asarray(checked, dtype=np.int64)
