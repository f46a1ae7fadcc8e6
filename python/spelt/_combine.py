"""Grain's stream transformations that the engine runs per element (``grain.experimental``):
LimitIterDataset, RepeatIterDataset, ZipMapDataset, ZipIterDataset and MixedIterDataset
(``IterDataset.mix``). Each is a thin face over one engine op (cpp/src/ops/limit.cc,
iter_repeat.cc, zip.cc, iter_mix.cc); arguments, outputs, messages and iterator states follow
Grain 0.2.18 (grain/_src/python/dataset/transformations/{limit,repeat,zip,mix}.py)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from spelt import _core
from spelt import dataset
from spelt import element_spec


class LimitIterDataset(dataset._CountedIndex, dataset._ParentSpec, dataset.IterDataset):  # pylint: disable=protected-access
    """The first ``count`` elements of ``parent``. State: ``{"parent", "count_elements_read"}``.
    ValueError if count <= 0 (Grain's message)."""

    def __init__(self, parent: dataset.IterDataset, count: int):
        super().__init__(parent)
        self._count = dataset._int_arg(count, "count")  # pylint: disable=protected-access
        self._node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._stream_nodes()[0].limit(dataset._clamped(self._count))  # pylint: disable=protected-access

    _COUNT = "count_elements_read"

    def __str__(self) -> str:
        return f"LimitIterDataset(count={self._count})"


class RepeatIterDataset(dataset._ParentSpec, dataset.IterDataset):  # pylint: disable=protected-access
    """``parent`` num_epochs times (None: forever); every epoch restarts the parent from its
    initial state, so epochs are identical (no reseeding, as in Grain). State:
    ``{"parent", "epoch"}``. ValueError if num_epochs <= 0."""

    def __init__(self, parent: dataset.IterDataset, num_epochs: int | None = None):
        super().__init__(parent)
        self._num_epochs = (
            None if num_epochs is None else dataset._int_arg(num_epochs, "num_epochs")  # pylint: disable=protected-access
        )
        self._node  # pylint: disable=pointless-statement

    def _make_node(self):
        return self._stream_nodes()[0].repeat(dataset._clamped(self._num_epochs))  # pylint: disable=protected-access

    def __str__(self) -> str:
        return f"RepeatIterDataset(num_epochs={self._num_epochs})"


class ZipMapDataset(dataset.MapDataset):
    """Element i is the tuple of the parents' elements i (None for a filtered one).
    ValueError if there are no parents or their lengths differ (Grain's messages)."""

    def __init__(self, parents: Sequence[dataset.MapDataset]):
        super().__init__(tuple(parents))
        self._node  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.zip([p._node for p in self._parents])

    @property
    def _element_spec(self) -> Any:
        return tuple(element_spec.get_element_spec(p) for p in self._parents)

    def __str__(self) -> str:
        return f"ZipMapDataset(parents={list(self._parents)}"


class ZipIterDataset(dataset.IterDataset):
    """Tuples of the parents' next elements. With ``strict`` (default), parents of different
    lengths raise ValueError at the end (Grain's message). State: ``{"parents": [...]}``."""

    def __init__(self, parents: Sequence[dataset.IterDataset], *, strict: bool = True):
        super().__init__(tuple(parents))
        self._strict = bool(strict)
        self._node  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.zip_iter(self._stream_nodes(), self._strict)

    @property
    def _element_spec(self) -> Any:
        return tuple(element_spec.get_element_spec(p) for p in self._parents)

    def __str__(self) -> str:
        return f"ZipIterDataset(parents={list(self._parents)}, strict={self._strict})"


class MixedIterDataset(dataset._ParentSpec, dataset.IterDataset):  # pylint: disable=protected-access
    """Grain's ``IterDataset.mix``: element k from the parent that ``MapDataset.mix`` would
    pick for k, until the picked parent is exhausted. ``parents`` may be a mapping (then
    ``proportions`` too), whose state is keyed, so a checkpoint restores by key. State:
    ``{"parents", "index", "stop"}``."""

    def __init__(
        self,
        parents: Sequence[dataset.IterDataset] | Mapping[str, dataset.IterDataset],
        proportions: Sequence[float] | Mapping[str, float] | None = None,
    ):
        if isinstance(parents, Mapping):
            self._keys = list(parents)  # insertion order, as Grain's tree_lib flattens
            flat = [parents[k] for k in self._keys]
            if isinstance(proportions, Mapping):
                proportions = [proportions[k] for k in self._keys]
        else:
            self._keys = []
            flat = list(parents)
        super().__init__(flat)
        self._weights = None if proportions is None else [float(w) for w in proportions]
        self._node  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.mix_iter(self._stream_nodes(), self._weights, self._keys)

    def __str__(self) -> str:
        weights = self._weights or [1] * len(self._parents)  # Grain scales these too
        proportions = [int(w * (100 / min(weights))) for w in weights]
        return f"MixedIterDataset([{len(self._parents)} parents], proportions={proportions})"
