"""Element specifications (Grain's ``ShapeDtypeStruct``, ``ShapeDtypeStructProtocol`` and
``get_element_spec``, grain/_src/python/dataset/base.py and dataset.py)."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import numpy as np

from spelt import _tree


class ShapeDtypeStructProtocol(Protocol):
    """Anything with ``shape`` (tuple of int or None) and ``dtype`` (numpy dtype-like)."""

    @property
    def shape(self) -> tuple[int | None, ...]: ...

    @property
    def dtype(self) -> np.typing.DTypeLike: ...


@dataclasses.dataclass(slots=True, frozen=True)
class ShapeDtypeStruct(ShapeDtypeStructProtocol):
    """Shape and dtype of one leaf of an element."""

    shape: tuple[int | None, ...]
    dtype: np.typing.DTypeLike


def _leaf_spec(leaf: Any) -> ShapeDtypeStruct:
    array = np.asarray(leaf)
    return ShapeDtypeStruct(shape=array.shape, dtype=array.dtype)


def get_element_spec(ds: Any) -> Any:
    """The tree of ``ShapeDtypeStruct`` of the elements of ``ds`` (a MapDataset or an
    IterDataset), read from its first element: dataset's ``_element_spec`` if it defines one
    (as Grain's datasets may), else the first element that is not filtered out (None) of a
    MapDataset, or the first element of ``iter(ds)``. ValueError if there is none."""
    spec = getattr(ds, "_element_spec", None)
    if spec is not None:
        return spec
    if hasattr(ds, "__getitem__"):
        elements = (ds[i] for i in range(len(ds)))
        element = next((e for e in elements if e is not None), None)
    else:
        element = next(iter(ds), None)
    if element is None:
        raise ValueError(f"cannot infer the element spec of an empty dataset {ds}")
    return _tree.map_structure(_leaf_spec, element)
