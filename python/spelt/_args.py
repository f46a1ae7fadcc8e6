"""Argument checks shared by the Dataset API: Python-side type checks and seed resolution.

Grain accepts any integer type for counts, indices and seeds (Python or NumPy ints, not bool);
counts and slice bounds beyond the engine's int64 saturate, as Python's own do.
"""

from __future__ import annotations

import operator
from typing import Any

MAX_INDEX = 2**63 - 1  # sys.maxsize: the engine's indices are int64


def clamped(value: Any) -> Any:
    """An int beyond the engine's int64 range as the nearest int64 (Python's slices and counts
    saturate alike: a length never exceeds 2**63 - 1); anything else unchanged."""
    if isinstance(value, int) and not isinstance(value, bool):
        return max(-MAX_INDEX, min(MAX_INDEX, value))
    return value


def int_arg(value: Any, what: str) -> int:
    """``value`` as a Python int: any integer type (Python or NumPy, as Grain accepts), but not
    bool. TypeError naming ``what`` otherwise."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    return operator.index(value)


def check_seed(seed: Any, what: str) -> int:
    """A 32-bit seed (shuffle, window shuffle). TypeError if not an int, ValueError if outside
    [0, 2**32)."""
    seed = int_arg(seed, f"{what}: seed")
    if seed < 0 or seed >= 2**32:
        raise ValueError(f"{what}: seed must be in [0, 2**32), got {seed}")
    return seed


def seed_words(seed: Any, what: str = "seed") -> list[int]:
    """The 32-bit words of a ``ds.seed()`` or ``random_map`` seed, least significant first: any
    non-negative int, as Grain (numpy's SeedSequence) accepts. TypeError if not an int,
    ValueError if negative."""
    seed = int_arg(seed, f"{what}: seed")
    if seed < 0:
        raise ValueError(f"{what}: seed must be non-negative, got {seed}")
    words = [seed & 0xFFFFFFFF]
    while seed := seed >> 32:
        words.append(seed & 0xFFFFFFFF)
    return words


def _default_seed(parent_node: Any, what: str) -> int:
    derived = parent_node.default_seed()
    if derived is None:
        raise ValueError(
            f"{what} requires a seed: pass seed=... or call ds.seed(...) earlier in the pipeline"
        )
    return derived


def resolve_seed(seed: int | None, parent_node: Any, what: str) -> int:
    """A 32-bit seed (shuffle): ``seed`` if given, else the default seed from ``ds.seed()``
    upstream of the engine node ``parent_node``. ValueError if there is none."""
    return _default_seed(parent_node, what) if seed is None else check_seed(seed, what)


def resolve_seed_words(seed: int | None, parent_node: Any, what: str) -> list[int]:
    """A seed of any size (random_map), as its 32-bit words: ``seed`` if given, else the
    default seed from ``ds.seed()`` upstream of ``parent_node``."""
    return [_default_seed(parent_node, what)] if seed is None else seed_words(seed, what)
