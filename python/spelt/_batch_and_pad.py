"""Grain's ``grain.experimental.batch_and_pad``
(grain/_src/python/dataset/transformations/batch.py at 0.2.18), computed by the engine
(BatchAndPad in spelt/stack.h)."""

from __future__ import annotations

from typing import Any, Sequence

from spelt import _core


def batch_and_pad(values: Sequence[Any], *, batch_size: int, pad_value: Any = 0) -> Any:
    """Stacks ``values`` along a new axis 0 (as ``batch`` does) and pads each leaf to
    ``batch_size`` rows with ``pad_value``, in the dtype of that leaf of ``values[0]`` (then
    cast to the batch's dtype, as np.concatenate does). Pass it as ``batch_fn`` (with
    ``functools.partial``) to pad the last batch instead of dropping it.

    ValueError if ``values`` is empty or longer than ``batch_size`` (Grain's messages), if the
    values differ in structure or shape, or if a leaf to pad is not numeric (Spelt pads
    numeric leaves only).
    """
    return _core.batch_and_pad(list(values), batch_size, pad_value)
