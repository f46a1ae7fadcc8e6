"""Adapters from Grain transforms (or plain callables) to the functions the engine calls.

Each adapter is a small picklable class, so pipelines can be sent to worker processes.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from spelt import transforms


def _method_or_callable(transform: Any, base: type, method: str, what: str) -> Callable:
  if isinstance(transform, base):
    return getattr(transform, method)
  if callable(transform):
    return transform
  raise TypeError(
      f"{what} expects a {base.__name__} transform or a callable, got"
      f" {type(transform).__name__}"
  )


def map_fn(transform: Any) -> Callable:
  return _method_or_callable(transform, transforms.Map, "map", "map")


def filter_fn(transform: Any) -> Callable:
  return _method_or_callable(transform, transforms.Filter, "filter", "filter")


def map_with_index_fn(transform: Any) -> Callable:
  return _method_or_callable(
      transform, transforms.MapWithIndex, "map_with_index", "map_with_index"
  )


def random_map_fn(transform: Any) -> Callable:
  return _method_or_callable(
      transform, transforms.RandomMap, "random_map", "random_map"
  )


def reset_philox_counter(rng: np.random.Generator, index: int) -> None:
  """Sets rng's Philox counter to [0, 0, 0, index] with an empty buffer (Grain's scheme)."""
  state = rng.bit_generator.state
  state["state"]["counter"] = np.array([0, 0, 0, index], dtype=np.uint64)
  state["buffer"] = np.zeros(4, dtype=np.uint64)
  state["buffer_pos"] = 4
  state["has_uint32"] = 0
  state["uinteger"] = 0
  rng.bit_generator.state = state


class RandomMapCall:
  """Calls fn(element, rng) with rng = Generator(Philox(seed)) at counter [0, 0, 0, index].

  The engine passes (element, index). One Generator per thread is reused, as Grain does;
  user code must not keep the rng beyond the call.
  """

  def __init__(self, fn: Callable, seed: int):
    self._fn = fn
    self._seed = seed
    self._local = threading.local()

  def __call__(self, element: Any, index: int) -> Any:
    rng = getattr(self._local, "rng", None)
    if rng is None:
      rng = self._local.rng = np.random.Generator(np.random.Philox(self._seed))
    reset_philox_counter(rng, index)
    return self._fn(element, rng)

  def __getstate__(self):
    return {"fn": self._fn, "seed": self._seed}

  def __setstate__(self, state):
    self.__init__(state["fn"], state["seed"])
