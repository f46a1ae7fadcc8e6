"""Batching: ``ds.batch`` on a MapDataset (batches never span epochs) and an IterDataset, and
Grain's ``grain.experimental.batch_and_pad``
(grain/_src/python/dataset/transformations/batch.py at 0.2.18). The engine stacks the elements
(spelt/stack.h; cpp/src/ops/batch.cc)."""

from __future__ import annotations

from typing import Any, Sequence

from spelt import _args
from spelt import _base
from spelt import _core


class _BatchStr:
    def __str__(self) -> str:
        return (
            f"{self.engine_node.name()}(batch_size={self.args[0]}, drop_remainder={self.args[1]})"
        )


class BatchMapDataset(_BatchStr, _base.BatchSpec, _base.OpMapDataset):
    """Args: (batch_size, drop_remainder, batch_fn or None)."""

    _build = staticmethod(_core.MapDataset.batch)


class BatchIterDataset(_BatchStr, _base.BatchSpec, _base.OpIterDataset):
    """Args: (batch_size, drop_remainder, batch_fn or None). State: the parent's."""

    _build = staticmethod(_core.IterDataset.batch)


def batch_and_pad(values: Sequence[Any], *, batch_size: int, pad_value: Any = 0) -> Any:
    """Stacks ``values`` along a new axis 0 (as ``batch`` does) and pads each leaf to
    ``batch_size`` rows with ``pad_value``, in the dtype of that leaf of ``values[0]`` (then
    cast to the batch's dtype, as np.concatenate does). Pass it as ``batch_fn`` (with
    ``functools.partial``) to pad the last batch instead of dropping it.

    ValueError if ``values`` is empty or longer than ``batch_size`` (Grain's messages), if the
    values differ in structure or shape, or if a leaf to pad is not numeric (Spelt pads
    numeric leaves only).
    """
    batch_size = _args.int_arg(batch_size, "batch_and_pad: batch_size")
    return _core.batch_and_pad(list(values), batch_size, pad_value)
