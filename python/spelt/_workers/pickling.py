"""Pickling what worker processes run, with an error that names the object that failed.

The pipeline is pickled with cloudpickle (lambdas, local functions and classes of ``__main__``
travel by value). When that fails, the dataset tree is searched in post-order, as Grain does,
and inside the first dataset that fails to pickle, its attributes (and their items and
attributes, a few levels deep) for the first object that fails on its own; the error gets a
note naming it, e.g. ``MapMapDataset.args[0]._lock (<_thread.lock object ...>)``.
"""

from __future__ import annotations

from typing import Any, Iterator

import cloudpickle

_SEARCH_DEPTH = 4
# Dataset attributes that are not part of what it computes.
_SKIPPED = ("_parents", "_node_cache")


def dumps(obj: Any, what: str) -> bytes:
    """cloudpickle.dumps(obj); on failure re-raises the error with a note naming the culprit
    inside `obj` (`what` names obj itself, e.g. "the pipeline")."""
    try:
        return cloudpickle.dumps(obj)
    except Exception as e:
        e.add_note(
            f"spelt: {what} must be picklable to run in worker processes, but"
            f" {_describe_culprit(obj, what)} cannot be pickled"
        )
        raise


def _fails(obj: Any) -> bool:
    try:
        cloudpickle.dumps(obj)
    except Exception:  # pylint: disable=broad-exception-caught
        return True
    return False


def _describe_culprit(obj: Any, what: str) -> str:
    dataset = _first_failing_dataset(obj)
    if dataset is None:
        path, culprit = _smallest_failing_part(obj, what, _SEARCH_DEPTH)
    else:
        # Named by its class, as Grain names it (Spelt's own classes are Grain's with a "_").
        name = type(dataset).__name__.lstrip("_")
        path, culprit = _smallest_failing_part(dataset, name, _SEARCH_DEPTH)
    return f"{path} ({_short_repr(culprit)})"


def _first_failing_dataset(obj: Any) -> Any:
    """The first dataset in post-order (parents first) that fails to pickle, or None."""
    for parent in getattr(obj, "parents", ()):
        found = _first_failing_dataset(parent)
        if found is not None:
            return found
    if hasattr(obj, "parents") and _fails(_without_parents(obj)):
        return obj
    return None


def _without_parents(dataset: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(dataset).items() if k not in _SKIPPED}


def _parts(obj: Any) -> Iterator[tuple[str, Any]]:
    """(path suffix, value) of the items or attributes of obj."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield f"[{k!r}]", v
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield f"[{i}]", v
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        attrs = _without_parents(obj) if hasattr(obj, "parents") else vars(obj)
        for k, v in attrs.items():
            yield f".{k}", v
    closure = getattr(obj, "__closure__", None)
    if closure:
        names = obj.__code__.co_freevars
        for name, cell in zip(names, closure):
            try:
                yield f".<closure {name}>", cell.cell_contents
            except ValueError:  # empty cell
                continue


def _smallest_failing_part(obj: Any, path: str, depth: int) -> tuple[str, Any]:
    """(path, object) of the deepest failing part of obj along the first failing branch."""
    if depth > 0:
        for suffix, part in _parts(obj):
            if _fails(part):
                return _smallest_failing_part(part, path + suffix, depth - 1)
    return path, obj


def _short_repr(obj: Any, limit: int = 200) -> str:
    try:
        text = repr(obj)
    except Exception:  # pylint: disable=broad-exception-caught
        text = f"<{type(obj).__qualname__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
