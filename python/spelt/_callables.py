"""Adapters from Grain transforms (or plain callables) to the functions the engine calls.

Each adapter is a small picklable class, so pipelines can be sent to worker processes.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Callable

import numpy as np

from spelt import transforms


def _method_or_callable(transform: Any, base: type, method: str, what: str) -> Callable:
    if isinstance(transform, base):
        return getattr(transform, method)
    if isinstance(transform, type) and issubclass(transform, _TRANSFORMS):
        raise TypeError(
            f"{what} expects a transform instance, got the class {transform.__name__}:"
            f" pass {transform.__name__}(...)"
        )
    if callable(transform):
        return transform
    raise TypeError(
        f"{what} expects a {base.__name__} transform or a callable, got {type(transform).__name__}"
    )


_TRANSFORMS = (transforms.Map, transforms.RandomMap, transforms.MapWithIndex, transforms.Filter)


def transform_of(fn: Callable) -> Any:
    """The transform the user passed, for a function the engine calls: the ``grain.transforms``
    object whose method ``fn`` is (see the adapters below), else ``fn`` itself."""
    if inspect.ismethod(fn) and isinstance(fn.__self__, _TRANSFORMS):
        return fn.__self__
    return fn


def filter_name(fn: Callable) -> str:
    """Grain's name of a filter in messages, for the function the engine calls: the class name
    of a ``grain.transforms.Filter`` (whose ``filter`` method ``fn`` is), else
    ``get_pretty_transform_name(fn)`` (Grain's FilterIterDataset)."""
    transform = transform_of(fn)
    if transform is not fn:
        return type(transform).__name__
    return transforms.get_pretty_transform_name(fn)


def map_fn(transform: Any) -> Callable:
    """The function to call for `transform`: its transforms.Map.map, or `transform` if it is a callable.
    TypeError otherwise."""
    return _method_or_callable(transform, transforms.Map, "map", "map")


def filter_fn(transform: Any) -> Callable:
    """The function to call for `transform`: its transforms.Filter.filter, or `transform` if it is a callable.
    TypeError otherwise."""
    return _method_or_callable(transform, transforms.Filter, "filter", "filter")


def map_with_index_fn(transform: Any) -> Callable:
    """The function to call for `transform`: its transforms.MapWithIndex.map_with_index, or `transform` if it is a callable.
    TypeError otherwise."""
    return _method_or_callable(
        transform, transforms.MapWithIndex, "map_with_index", "map_with_index"
    )


def flat_map_fn(transform: Any) -> Callable:
    """The function to call for `transform`: its transforms.FlatMap.flat_map, or `transform` if it is a callable.
    TypeError otherwise."""
    return _method_or_callable(transform, transforms.FlatMap, "flat_map", "FlatMapIterDataset")


def random_map_fn(transform: Any) -> Callable:
    """The function to call for `transform`: its transforms.RandomMap.random_map, or `transform` if it is a callable.
    TypeError otherwise."""
    return _method_or_callable(transform, transforms.RandomMap, "random_map", "random_map")


_MASK64 = (1 << 64) - 1
_local = threading.local()


def philox_generator(key: int, counter: tuple[int, int, int, int] | int) -> np.random.Generator:
    """The numpy Generator over Philox4x64-10 with exactly this 128-bit key and counter.

    This is how Spelt hands its per-element random stream (computed in C++: the key from the
    seed as numpy derives it, the counter from the element's index) to Python callables, in the
    form Grain builds: ``Generator(Philox(seed))`` at counter ``[0, 0, 0, index]`` for
    ``random_map`` (Grain's dataset/transformations/map.py), ``Generator(Philox(key=seed + g))``
    for a DataLoader record (Grain's samplers.py). An int counter means ``[0, 0, 0, counter]``.
    The output buffer is empty, so draws equal those of a fresh generator in that state.

    One Generator per thread is reused (as Grain does): user code must not keep it beyond the
    call it was given to.
    """
    rng = getattr(_local, "rng", None)
    if rng is None:
        rng = _local.rng = np.random.Generator(np.random.Philox(0))
    if isinstance(counter, int):
        counter = (0, 0, 0, counter)
    rng.bit_generator.state = {
        "bit_generator": "Philox",
        "state": {
            "counter": np.array(counter, dtype=np.uint64),
            "key": np.array([key & _MASK64, key >> 64], dtype=np.uint64),
        },
        "buffer": np.zeros(4, dtype=np.uint64),
        "buffer_pos": 4,
        "has_uint32": 0,
        "uinteger": 0,
    }
    return rng
