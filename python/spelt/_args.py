"""Argument checks shared by the public API (datasets, transforms, samplers, sharding, options):
Python-side type checks and seed resolution.

A wrong type is a TypeError naming the argument and the type received, raised where the
argument is given, before anything reaches the engine (whose bindings would answer with a list
of internal signatures). Grain accepts any integer type for counts, indices and seeds (Python
or NumPy ints, not bool); counts and slice bounds beyond the engine's int64 saturate, as
Python's own do.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np

from spelt import _core

MAX_INDEX = 2**63 - 1  # sys.maxsize: the engine's indices are int64


def clamped(value: Any) -> Any:
    """An int beyond the engine's int64 range as the nearest int64 (Python's slices and counts
    saturate alike: a length never exceeds 2**63 - 1); anything else unchanged."""
    if isinstance(value, int) and not isinstance(value, bool):
        return max(-MAX_INDEX, min(MAX_INDEX, value))
    return value


def int_arg(value: Any, what: str, *, optional: bool = False, bool_ok: bool = False) -> Any:
    """``value`` as a Python int: any integer type (Python or NumPy, as Grain accepts), but not
    bool unless ``bool_ok`` (for indices, which Python's own take as ints); with ``optional``,
    None too (returned as is). TypeError naming ``what`` and the type received otherwise."""
    if optional and value is None:
        return None
    if (isinstance(value, bool) and not bool_ok) or not hasattr(type(value), "__index__"):
        expected = "an int or None" if optional else "an int"
        raise TypeError(f"{what} must be {expected}, got {type(value).__name__}")
    return operator.index(value)


def bool_arg(value: Any, what: str) -> bool:
    """``value`` as a bool: a bool, a NumPy bool or any integer type (Grain takes these flags by
    truthiness: ``drop_remainder=1`` and ``np.bool_(True)`` work there). TypeError naming
    ``what`` and the type received for anything else (a str such as ``"False"`` would be true
    in Grain; Spelt refuses it, docs/compatibility.md)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, np.bool_) or hasattr(type(value), "__index__"):
        return bool(value)
    raise TypeError(f"{what} must be a bool, got {type(value).__name__} ({value!r})")


def options_arg(value: Any, kind: type, what: str, *, optional: bool = True) -> Any:
    """``value`` if it is an instance of ``kind`` (ReadOptions, MultiprocessingOptions, ...)
    or, with ``optional``, None; TypeError naming ``what``, the type received and ``kind``
    otherwise (a dict or an int would fail later with an AttributeError)."""
    if (optional and value is None) or isinstance(value, kind):
        return value
    expected = f"a {kind.__name__} or None" if optional else f"a {kind.__name__}"
    raise TypeError(f"{what} must be {expected}, got {type(value).__name__} ({value!r})")


def int_fields(options: Any, names: tuple[str, ...]) -> tuple[int, ...]:
    """The fields ``names`` of an options object (ReadOptions, MultiprocessingOptions,
    ShardOptions) as ints (:func:`int_arg`): TypeError naming the class and the field."""
    kind = type(options).__name__
    return tuple(int_arg(getattr(options, name), f"{kind}.{name}") for name in names)


def callable_arg(value: Any, what: str, *, optional: bool = False) -> Any:
    """``value`` if it is callable (or, with ``optional``, None); TypeError naming ``what`` and
    the type received otherwise."""
    if callable(value) or (optional and value is None):
        return value
    expected = "a callable or None" if optional else "a callable"
    raise TypeError(f"{what} must be {expected}, got {type(value).__name__}")


def number_arg(value: Any, what: str, *, optional: bool = False) -> Any:
    """``value`` as a float: any real number (Python or NumPy), but not bool; with
    ``optional``, None too (returned as is). TypeError naming ``what`` and the type received
    otherwise."""
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        expected = "a number or None" if optional else "a number"
        raise TypeError(f"{what} must be {expected}, got {type(value).__name__}")
    return float(value)


def weights_arg(weights: Any, what: str) -> list[float] | None:
    """Mixing weights as floats (None stays None): TypeError naming ``what`` for something that
    is not a sequence of real numbers (Grain's type too), naming the position of a bad one."""
    if weights is None:
        return None
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__iter__"):
        raise TypeError(
            f"{what}: weights must be a sequence of numbers, got {type(weights).__name__}"
        )
    return [number_arg(w, f"{what}: weights[{i}]") for i, w in enumerate(weights)]


def datasets_arg(datasets: Any, kinds: tuple[type, ...], what: str) -> tuple[Any, ...]:
    """``datasets`` (an iterable) as a tuple of instances of ``kinds``: TypeError naming ``what``
    and the type received otherwise (with the position of an item that is not one)."""
    if not hasattr(datasets, "__iter__"):
        raise TypeError(f"{what}: datasets must be a sequence, got {type(datasets).__name__}")
    datasets = tuple(datasets)
    for position, ds in enumerate(datasets):
        if not isinstance(ds, kinds):
            expected = " or ".join(kind.__name__ for kind in kinds)
            raise TypeError(
                f"{what}: datasets[{position}] must be a {expected}, got {type(ds).__name__}"
            )
    return datasets


def data_source(source: Any, what: str, methods: tuple[str, ...] = ("__getitem__",)) -> Any:
    """``source`` if it has ``methods`` (a random-access data source); TypeError naming ``what``
    and the type received otherwise."""
    if not all(hasattr(source, method) for method in methods):
        raise TypeError(
            f"{what} must be a random-access data source ({' and '.join(methods)}),"
            f" got {type(source).__name__}"
        )
    return source


def seed_words(seed: Any, what: str = "seed") -> list[int]:
    """The 32-bit words of a ``ds.seed()`` or ``random_map`` seed, least significant first: any
    non-negative int, as Grain (numpy's SeedSequence) accepts. TypeError if not an int,
    ValueError if negative (checked by the engine, spelt/seeds.h)."""
    return _core.seed_words(int_arg(seed, f"{what}: seed"), what)


def resolve_seed(seed: int | None, parent_node: Any, what: str) -> int:
    """A 32-bit seed (shuffle), resolved by the engine (spelt/seeds.h): ``seed`` if given, else
    the default seed from ``ds.seed()`` upstream of the engine node ``parent_node``. TypeError
    if ``seed`` is neither an int nor None; ValueError if it is outside [0, 2**32) or there is
    no default."""
    seed = int_arg(seed, f"{what}: seed", optional=True)
    return parent_node.resolve_seed(clamped(seed), what)


def resolve_seed_words(seed: int | None, parent_node: Any, what: str) -> list[int]:
    """A seed of any size (random_map), as its 32-bit words: ``seed`` if given, else the
    default seed from ``ds.seed()`` upstream of ``parent_node`` (resolved by the engine)."""
    return [parent_node.resolve_seed(None, what)] if seed is None else seed_words(seed, what)
