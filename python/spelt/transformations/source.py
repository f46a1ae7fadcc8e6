"""The dataset sources: ``MapDataset.source`` over a random-access data source and
``MapDataset.range`` (Grain's SourceMapDataset and RangeMapDataset,
grain/_src/python/dataset/transformations/source.py)."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from spelt import _args
from spelt import _base
from spelt import _core
from spelt import element_spec
from spelt import options as options_lib


def native_or_python(source: Any) -> Any:
    """The engine's own source for sources that have one (read in C++ without the GIL, e.g.
    ArrayRecordDataSource), else the Python object itself."""
    native = getattr(source, "_spelt_native_source", None)
    return native() if native is not None else source


class SourceMapDataset(_base.MapDataset):
    """``MapDataset.source(source)``: element i is ``source[i % len(source)]``, read in
    batches (``__getitems__`` where the source has it). TypeError if ``source`` has no
    ``__len__`` or ``__getitem__``."""

    def __init__(self, source: Any):
        super().__init__()
        self._source = _args.data_source(source, "MapDataset.source", ("__len__", "__getitem__"))

    def _make_node(self):
        return _core.source(native_or_python(self._source))

    @property
    def _spelt_data_source(self) -> Any:
        """The source an iterator's ``close()`` closes (``_base.closable_sources``)."""
        return self._source

    def __str__(self) -> str:
        return f"SourceMapDataset(source={type(self._source).__name__})"  # Grain's


def _int64_range(start: int, stop: int, step: int) -> tuple[int, int, int]:
    """(start, stop, step) of the engine's int64 range with the elements of Python's
    ``range(start, stop, step)``: the same values where they fit in int64. OverflowError if it
    has more than sys.maxsize elements (Python's and Grain's ``len()``) or an element or the
    step does not fit in int64."""
    r = builtins.range(start, stop, step)
    length = len(r)
    if all(-_args.MAX_INDEX <= v <= _args.MAX_INDEX for v in (start, stop, step)):
        return start, stop, step
    if length == 0:
        return 0, 0, 1
    step = step if length > 1 else (1 if step > 0 else -1)
    bounds = (r[0], r[-1] + (1 if step > 0 else -1), step)
    if not all(-_args.MAX_INDEX <= v <= _args.MAX_INDEX for v in bounds):
        raise OverflowError(
            f"MapDataset.range({start}, {stop}, {r.step}): the elements and the step must fit"
            " in int64"
        )
    return bounds


class RangeMapDataset(_base.MapDataset):
    """``MapDataset.range(start, stop, step)``: Python's range as int64 elements."""

    def __init__(self, start: int, stop: int, step: int):
        super().__init__()
        self._args = (start, stop, step)
        self._int64_args = _int64_range(start, stop, step)

    def _make_node(self):
        return _core.range(*self._int64_args)

    @property
    def _element_spec(self) -> Any:
        return element_spec.ShapeDtypeStruct(shape=(), dtype=np.int64)

    def __str__(self) -> str:
        start, stop, step = self._args
        return f"RangeMapDataset(start={start}, stop={stop}, step={step})"

    def to_iter_dataset(
        self,
        read_options: options_lib.ReadOptions | None = None,
        *,
        allow_nones: bool = False,
    ) -> _base.IterDataset:
        """As ``MapDataset.to_iter_dataset``, but without ``read_options`` the elements are read
        in the calling thread, ``ReadOptions(prefetch_buffer_size=0)`` (Grain's
        RangeMapDataset: there is no I/O to overlap)."""
        _args.options_arg(read_options, options_lib.ReadOptions, "to_iter_dataset: read_options")
        return super().to_iter_dataset(
            read_options or options_lib.ReadOptions(prefetch_buffer_size=0),
            allow_nones=allow_nones,
        )
