"""Element trees as Grain's tree_lib sees them: mapping over leaves, flattening, and np.stack
leaf by leaf.

Grain 0.2.18 switches its tree library on whether ``jax`` imports, and so does Spelt, decided
once, on first use (:func:`uses_jax`):

- without JAX, trees are nested dict / list / tuple / namedtuple of leaves (dict values in the
  first tree's key order; None is a leaf);
- with JAX, they are JAX pytrees (``jax.tree_util``): None is an empty subtree, dict keys come
  out sorted, and registered nodes (``jax.tree_util.register_dataclass``, flax structs, custom
  ``register_pytree_node`` classes) are traversed. The engine's Stack follows the same rule
  (spelt/stack.h, TreeSemantics), with registered nodes flattened once each by
  :func:`pytree_node`.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
from typing import Any, Callable

import numpy as np


# Set by use_plain_trees(): the process uses plain trees even if jax imports.
_PLAIN: list[bool] = []


def use_plain_trees() -> None:
    """Makes this process use plain trees even if ``jax`` is installed: a worker process whose
    consumer cannot import jax builds elements and batches as the consumer does. Call before
    the first :func:`uses_jax`."""
    _PLAIN[:] = [True]
    uses_jax.cache_clear()
    _jax_tree_util.cache_clear()


@functools.cache
def _jax_tree_util() -> Any:
    """``jax.tree_util`` (imported once, when first needed), or None without JAX."""
    if not uses_jax():
        return None
    try:
        from jax import tree_util  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return tree_util


@functools.cache
def uses_jax() -> bool:
    """Whether trees are JAX pytrees: ``jax`` is installed, as Grain decides by whether it
    imports. Found without importing it (``import jax`` takes about a second), so that trees of
    plain containers never import it; it is imported when a function here or the engine needs
    ``jax.tree_util``. Decided on the first call and kept for the process."""
    if _PLAIN:
        return False
    try:  # None for sys.modules["jax"] = None; an import hook that blocks jax raises
        return importlib.util.find_spec("jax") is not None
    except (ImportError, ValueError):
        return False


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _map_plain(fn: Callable[..., Any], *trees: Any) -> Any:
    first = trees[0]
    if isinstance(first, dict):
        for t in trees[1:]:
            if not isinstance(t, dict) or t.keys() != first.keys():
                raise ValueError(f"dict structures differ: {first!r} vs {t!r}")
        items = ((k, _map_plain(fn, *(t[k] for t in trees))) for k in first)
        if isinstance(first, collections.defaultdict):
            return type(first)(first.default_factory, items)
        return type(first)(items)
    if isinstance(first, (list, tuple)):
        for t in trees[1:]:
            if not isinstance(t, (list, tuple)) or len(t) != len(first):
                raise ValueError(f"sequence structures differ: {first!r} vs {t!r}")
        items = [_map_plain(fn, *children) for children in zip(*trees)]
        if _is_namedtuple(first):
            return type(first)(*items)
        return type(first)(items)
    return fn(*trees)


def map_structure(fn: Callable[..., Any], *trees: Any) -> Any:
    """fn applied to the leaves at the same position of each tree (the first tree's structure).
    ValueError if the structures differ. With JAX this is ``jax.tree_util.tree_map``."""
    tree_util = _jax_tree_util()
    if tree_util is not None:
        return tree_util.tree_map(fn, *trees)
    return _map_plain(fn, *trees)


def assert_same_structure(a: Any, b: Any) -> None:
    """ValueError if `a` and `b` differ in structure (with JAX: their ``tree_structure``, so a
    None against a leaf differs too)."""
    tree_util = _jax_tree_util()
    if tree_util is None:
        _map_plain(lambda *_: None, a, b)
    elif tree_util.tree_structure(a) != tree_util.tree_structure(b):
        raise ValueError(f"structures differ: {a!r} vs {b!r}")


def flatten(tree: Any) -> list[Any]:
    """The leaves of `tree` in order (dict values in key order; sorted keys with JAX)."""
    tree_util = _jax_tree_util()
    if tree_util is not None:
        return tree_util.tree_leaves(tree)
    out: list[Any] = []
    _map_plain(out.append, tree)
    return out


def stack(elements: list[Any]) -> Any:
    """np.stack of the leaves at each position (Grain's default batch function)."""
    return map_structure(lambda *xs: np.stack(xs), *elements)


@functools.lru_cache(maxsize=4096)
def _unflattener(treedef: Any) -> Callable[[list[Any]], Any]:
    # One callable per distinct structure, so that the engine tells structures apart by
    # identity (the tags of spelt/value.h). Past 4096 structures in use at once, equal ones may
    # get distinct callables and then fail to batch together.
    return treedef.unflatten


def pytree_node(obj: Any) -> tuple[list[Any], Callable[[list[Any]], Any]] | None:
    """With JAX, for an object that JAX traverses but the engine has no container for (a
    registered node, a defaultdict or OrderedDict): its leaves (``jax.tree_util.tree_flatten``,
    so Nones dropped and dict keys sorted inside it) and the callable that rebuilds it from
    them, the same callable for equal structures. None when ``obj`` is a JAX leaf, or without
    JAX. The engine calls this once per such object (cpp/python/py_value.cc)."""
    tree_util = _jax_tree_util()
    if tree_util is None:
        return None
    leaves, treedef = tree_util.tree_flatten(obj)
    if tree_util.treedef_is_leaf(treedef) and leaves and leaves[0] is obj:
        return None
    return leaves, _unflattener(treedef)
