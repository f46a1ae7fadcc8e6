"""Grain's ``grain.experimental.RebatchIterDataset``
(grain/_src/python/dataset/transformations/rebatch.py at 0.2.18): a face over the engine op
cpp/src/ops/rebatch.cc, which cuts and joins the batches."""

from __future__ import annotations

from typing import Any

from spelt import _args
from spelt import _base
from spelt import element_spec


class RebatchIterDataset(_base.IterDataset):
    """The batches of ``parent`` (pytrees of arrays sharing a leading batch dimension, e.g. the
    output of ``batch``) re-cut into batches of ``batch_size`` rows along axis 0; the last one
    is partial unless ``drop_remainder``. A batch inside one parent batch is a view of it; one
    spanning several is concatenated (np.concatenate's dtype). The tree structure is that of
    the first parent batch.

    State (Grain's): ``{"parent": parent state before the parent batch being cut,
    "batch_idx": rows of it already returned}``. ValueError if ``batch_size <= 0``, and from
    ``next()`` for a leaf that is not an array with a leading dimension (Spelt rebatches
    numeric arrays only), for leaves of different leading sizes, or for a parent batch of
    0 rows.
    """

    def __init__(self, parent: _base.IterDataset, batch_size: int, drop_remainder: bool = False):
        super().__init__(parent)
        self._batch_size = _args.int_arg(batch_size, "RebatchIterDataset: batch_size")
        self._drop_remainder = bool(drop_remainder)
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._stream_nodes()[0].rebatch(self._batch_size, self._drop_remainder)

    @property
    def _element_spec(self) -> Any:
        parent_spec = element_spec.get_element_spec(self._parents[0])
        return element_spec.rebatched_spec(parent_spec, self._batch_size)

    def __str__(self) -> str:
        return (
            f"RebatchIterDataset(batch_size={self._batch_size},"
            f" drop_remainder={self._drop_remainder})"
        )
