"""Abstract base classes for user transformations.

Behaviour follows Grain 0.2.18 (``grain.transforms``): the same class names,
abstract methods and ``Batch`` dataclass, so Grain transformations subclassing
``grain.transforms.Map`` etc. can be written against ``spelt.transforms``
unchanged. Implementations should be thread-safe: the engine may call them
from several threads at once.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np

from spelt import _args

__all__ = [
    "Map",
    "RandomMap",
    "MapWithIndex",
    "TfRandomMap",
    "Filter",
    "FlatMap",
    "Batch",
    "DatasetSelectionMap",
    "Transformation",
    "Transformations",
    "get_pretty_transform_name",
]


class Map(abc.ABC):
    """1:1 transformation; subclasses implement ``map(element) -> element``."""

    @abc.abstractmethod
    def map(self, element):
        """Returns the transformed ``element``."""


class RandomMap(abc.ABC):
    """Random 1:1 transformation.

    Subclasses implement ``random_map(element, rng) -> element`` where ``rng``
    is a per-record ``np.random.Generator`` supplied by the pipeline.
    """

    @abc.abstractmethod
    def random_map(self, element, rng: np.random.Generator):
        """Returns the transformed ``element``, drawing randomness from ``rng``."""


class MapWithIndex(abc.ABC):
    """1:1 transformation that also sees the element's index.

    Subclasses implement ``map_with_index(index: int, element) -> element``.
    """

    @abc.abstractmethod
    def map_with_index(self, index: int, element):
        """Returns the transformed ``element`` at position ``index``."""


class TfRandomMap(abc.ABC):
    """Random 1:1 transformation, in Grain meant for TensorFlow pipelines.

    Subclasses implement ``np_random_map(element, rng) -> element``.
    """

    @abc.abstractmethod
    def np_random_map(self, element, rng: np.random.Generator):
        """Returns the transformed ``element``, drawing randomness from ``rng``."""


class Filter(abc.ABC):
    """Keeps only elements for which ``filter(element)`` returns True."""

    @abc.abstractmethod
    def filter(self, element) -> bool:
        """Returns True to keep ``element``, False to drop it."""


class FlatMap(abc.ABC):
    """1:N transformation; ``flat_map(element)`` returns a sequence of elements.

    Attributes:
        max_fan_out: int, the most elements ``flat_map`` may return for one
            input (subclasses set it; exceeding it is an error in the
            pipeline). Keep it close to the real maximum for performance.
    """

    max_fan_out: int

    @abc.abstractmethod
    def flat_map(self, element) -> Sequence[Any]:
        """Returns the elements ``element`` is split into."""


@dataclasses.dataclass(frozen=True)
class Batch:
    """Frozen description of a batching step (as in Grain).

    Args:
        batch_size: int, elements per batch.
        drop_remainder: bool, default False; drop a final partial batch.
        batch_fn: Optional callable ``Sequence[element] -> batch``, default
            None (stack elements leaf-wise into numpy arrays).

    The constructor checks the types (TypeError naming the field for a
    ``batch_size`` that is not an int or a ``batch_fn`` that is not callable,
    which Grain raises only when the pipeline applies the batch); like
    Grain's; a non-positive ``batch_size`` is a ValueError here too (Grain:
    only when applied). ``drop_remainder`` may be a bool, a NumPy bool or an
    int (truthiness, as Grain).
    """

    batch_size: int
    drop_remainder: bool = False
    batch_fn: Callable[[Sequence[Any]], Any] | None = None

    def __post_init__(self):
        if _args.int_arg(self.batch_size, "Batch: batch_size") <= 0:
            raise ValueError(f"Batch: batch_size must be positive, got {self.batch_size}")
        _args.bool_arg(self.drop_remainder, "Batch: drop_remainder")
        _args.callable_arg(self.batch_fn, "Batch: batch_fn", optional=True)


class DatasetSelectionMap(abc.ABC):
    """Routes a global index to ``(dataset_index, index_in_dataset)`` (as in Grain).

    Subclasses implement ``__len__() -> int`` and
    ``__getitem__(index: int) -> tuple[int, int]``. They must be stateless,
    deterministic and picklable, since they may be called concurrently from
    several processes.
    """

    @abc.abstractmethod
    def __len__(self) -> int:
        """Returns the number of addressable global indices."""

    @abc.abstractmethod
    def __getitem__(self, index: int) -> tuple[int, int]:
        """Returns ``(dataset_index, index_in_dataset)`` for ``index``."""


Transformation = Union[
    Batch,
    Map,
    RandomMap,
    TfRandomMap,
    Filter,
    FlatMap,
    MapWithIndex,
]
Transformations = Sequence[Transformation]


# Grain's get_pretty_transform_name special-cases exactly these classes
# (MapWithIndex is not among them and is named like a plain callable).
_NAMED_BY_CLASS = (Batch, Map, RandomMap, TfRandomMap, Filter, FlatMap)


def get_pretty_transform_name(transform: Any) -> str:
    """Returns a display name for a transformation or callable (as in Grain).

    Args:
        transform: a ``Transformation`` instance or any callable.

    Returns:
        str. For Batch/Map/RandomMap/TfRandomMap/Filter/FlatMap instances: the
        class name, or ``str(transform)`` if the class defines ``__str__`` or
        ``__repr__``. Otherwise ``name @ .../a/b/file.py:line`` where ``name``
        is ``__name__`` (else ``repr``); just ``name`` if the source location
        is unavailable. Never raises for built-ins.
    """
    if isinstance(transform, _NAMED_BY_CLASS):
        cls = type(transform)
        if cls.__str__ is object.__str__ and cls.__repr__ is object.__repr__:
            return cls.__name__
        return str(transform)

    name = getattr(transform, "__name__", None)
    if name is None:
        name = repr(transform)
    try:
        path = inspect.getsourcefile(transform)
        if path is None:
            return name
        parts = path.split("/")
        if len(parts) >= 3:
            path = ".../" + "/".join(parts[-3:])
        line = inspect.getsourcelines(transform)[1]
    except (OSError, TypeError):
        return name
    return f"{name} @ {path}:{line}"
