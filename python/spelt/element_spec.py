"""Element specifications (Grain's ``ShapeDtypeStruct``, ``ShapeDtypeStructProtocol`` and
``get_element_spec``, grain/_src/python/dataset/base.py and dataset.py at 0.2.18).

The spec of a dataset is inferred without reading data, as Grain's is: a source of known
element type (``MapDataset.range``) starts it, and every transformation derives its spec from
its parents' (see the rules below). Datasets with no rule raise NotImplementedError."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Protocol, runtime_checkable

import numpy as np

from spelt import _tree


@runtime_checkable
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


def get_element_spec(ds: Any) -> Any:
    """The tree of ``ShapeDtypeStructProtocol`` of the elements of ``ds`` (a MapDataset or an
    IterDataset), inferred without making an iterator or reading any element (Grain's
    ``get_element_spec``): ``ds._element_spec``, which a user dataset may define.

    NotImplementedError for a dataset with no inference rule (a data source, a user
    dataset without ``_element_spec``, a flat_map, packing); ValueError for a map whose
    transform has no ``output_spec``; whatever a transform's ``output_spec`` raises."""
    return ds._element_spec  # pylint: disable=protected-access


def not_inferred(ds: Any) -> NotImplementedError:
    """The error of a dataset that has no inference rule (Grain's message)."""
    return NotImplementedError(
        f"`element_spec` inference is not implemented for {type(ds).__name__.lstrip('_')}"
    )


def transformed_spec(transform: Any, transform_name: str, parent: Any) -> Any:
    """The spec after a map, random_map or map_with_index over ``parent``:
    ``transform.output_spec(get_element_spec(parent))`` (Grain's
    SupportsElementSpecInference). ValueError if the transform has no ``output_spec`` (Grain's
    message), checked before the parent's spec is, as Grain does."""
    output_spec = getattr(transform, "output_spec", None)
    if not callable(output_spec):
        raise ValueError(
            f"Cannot infer element spec for transform {transform_name} because it does not"
            f" implement `output_spec` method. Implement `{transform_name}.output_spec(self,"
            " input_spec: PyTree[ShapeDtypeStructProtocol]) -> "
            " PyTree[ShapeDtypeStructProtocol]` to enable element spec inference."
        )
    return output_spec(get_element_spec(parent))


def batched_spec(input_spec: Any, batch_size: int, drop_remainder: bool, batch_fn: Any) -> Any:
    """The spec after ``batch``: each leaf gains a leading dimension of ``batch_size`` (None
    unless ``drop_remainder``, since the last batch may be short). A ``batch_fn`` (or the
    function of a ``functools.partial``) must give the spec itself with
    ``output_spec(input_spec, batch_size, drop_remainder)`` (Grain's BatchFn protocol), else
    NotImplementedError (Grain's message)."""
    if batch_fn is not None:
        fn = batch_fn.func if isinstance(batch_fn, functools.partial) else batch_fn
        output_spec = getattr(fn, "output_spec", None)
        if not callable(output_spec):
            raise NotImplementedError(
                "Element spec inference is not supported with custom batching functions"
            )
        return output_spec(input_spec, batch_size, drop_remainder)
    leading = batch_size if drop_remainder else None
    return _tree.map_structure(
        lambda s: ShapeDtypeStruct(shape=(leading, *s.shape), dtype=s.dtype), input_spec
    )


def rebatched_spec(input_spec: Any, batch_size: int) -> Any:
    """The spec after ``RebatchIterDataset``: the leading dimension of each leaf with a shape
    becomes ``batch_size`` (as Grain's, also when the remainder is kept)."""

    def replace(s: Any) -> Any:
        if not hasattr(s, "shape") or not hasattr(s, "dtype"):
            return s
        return type(s)(shape=(batch_size, *s.shape[1:]), dtype=s.dtype)

    return _tree.map_structure(replace, input_spec)
