"""Repeats: ``MapDataset.repeat`` (cpp/src/ops/repeat.cc) and Grain's
``grain.experimental.RepeatIterDataset`` (cpp/src/ops/iter_repeat.cc);
grain/_src/python/dataset/transformations/repeat.py at 0.2.18."""

from __future__ import annotations

from spelt import _args
from spelt import _base
from spelt import _core


class RepeatMapDataset(_base.ParentSpec, _base.OpMapDataset):
    """Args: (num_epochs or None for forever, reseed_each_epoch)."""

    _build = staticmethod(_core.MapDataset.repeat)

    def __str__(self) -> str:
        return f"RepeatMapDataset(num_epochs={self.args[0]})"


class RepeatIterDataset(_base.ParentSpec, _base.IterDataset):
    """``parent`` num_epochs times (None: forever); every epoch restarts the parent from its
    initial state, so epochs are identical (no reseeding, as in Grain). State:
    ``{"parent", "epoch"}``. ValueError if num_epochs <= 0."""

    def __init__(self, parent: _base.IterDataset, num_epochs: int | None = None):
        super().__init__(parent)
        self._num_epochs = None if num_epochs is None else _args.int_arg(num_epochs, "num_epochs")
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._stream_nodes()[0].repeat(_args.clamped(self._num_epochs))

    def __str__(self) -> str:
        return f"RepeatIterDataset(num_epochs={self._num_epochs})"
