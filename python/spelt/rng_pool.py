"""Grain's ``RngPool`` (grain/_src/python/dataset/transformations/map.py): reusable numpy
Philox generators, reset per use to counter ``[0, 0, op_seed, index]``."""

from __future__ import annotations

import threading

import numpy as np


class RngPool:
    """Generators over ``Philox(seed)``; thread-safe. ``acquire_rng(index, op_seed=0)`` returns
    one at counter ``[0, 0, op_seed, index]`` (what ``random_map`` hands out); give it back with
    ``release_rng``. Pickles to a fresh pool with the same seed."""

    def __init__(self, seed: int):
        self._seed = seed
        self._cache: list[np.random.Generator] = []
        self._lock = threading.Lock()

    def __reduce__(self):
        return (RngPool, (self._seed,))

    def acquire_rng(self, index: int, *, op_seed: int = 0) -> np.random.Generator:
        with self._lock:
            rng = self._cache.pop() if self._cache else None
        if rng is None:
            rng = np.random.Generator(np.random.Philox(self._seed))
        state = rng.bit_generator.state
        state["state"]["counter"] = np.array([0, 0, op_seed, index], dtype=np.uint64)
        state["buffer"] = np.array([0, 0, 0, 0], dtype=np.uint64)
        state["buffer_pos"] = 4
        state["has_uint32"] = 0
        state["uinteger"] = 0
        rng.bit_generator.state = state
        return rng

    def release_rng(self, rng: np.random.Generator) -> None:
        with self._lock:
            self._cache.append(rng)
