"""Element trees (nested dict / list / tuple / namedtuple of leaves), as Grain's tree_lib sees
them: mapping over leaves, flattening, and np.stack leaf by leaf."""

from __future__ import annotations

import collections
from typing import Any, Callable

import numpy as np


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def map_structure(fn: Callable[..., Any], *trees: Any) -> Any:
    """fn applied to the leaves at the same position of each tree (same structure; dict keys in
    the first tree's order). ValueError if the structures differ."""
    first = trees[0]
    if isinstance(first, dict):
        for t in trees[1:]:
            if not isinstance(t, dict) or t.keys() != first.keys():
                raise ValueError(f"dict structures differ: {first!r} vs {t!r}")
        items = ((k, map_structure(fn, *(t[k] for t in trees))) for k in first)
        if isinstance(first, collections.defaultdict):
            return type(first)(first.default_factory, items)
        return type(first)(items)
    if isinstance(first, (list, tuple)):
        for t in trees[1:]:
            if not isinstance(t, (list, tuple)) or len(t) != len(first):
                raise ValueError(f"sequence structures differ: {first!r} vs {t!r}")
        items = [map_structure(fn, *children) for children in zip(*trees)]
        if _is_namedtuple(first):
            return type(first)(*items)
        return type(first)(items)
    return fn(*trees)


def flatten(tree: Any) -> list[Any]:
    """The leaves of `tree` in order (dict values in key order)."""
    out: list[Any] = []
    map_structure(out.append, tree)
    return out


def stack(elements: list[Any]) -> Any:
    """np.stack of the leaves at each position (Grain's default batch function)."""
    return map_structure(lambda *xs: np.stack(xs), *elements)
