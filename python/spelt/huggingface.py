"""Hugging Face ``datasets`` as Spelt sources.

* A map-style ``datasets.Dataset`` already is a data source (``__len__``, ``__getitem__``,
  ``__getitems__``; picklable): ``grain.MapDataset.source(hf_dataset)`` or
  ``grain.DataLoader(data_source=hf_dataset, ...)``.
* A streaming ``datasets.IterableDataset`` becomes an IterDataset with
  :class:`HuggingFaceIterDataset`, checkpointed by the library's own ``state_dict()``.

A Spelt addition (Grain 0.2.18 has no Hugging Face source). ``datasets`` is not a dependency of
Spelt; this module never imports it.
"""

from __future__ import annotations

import copy
from typing import Any

from spelt import dataset


class _HuggingFaceIterator(dataset.DatasetIterator):
    """Iterates a private copy of the IterableDataset (its state lives in that object)."""

    def __init__(self, hf_dataset: Any):
        super().__init__()
        self._hf = copy.deepcopy(hf_dataset)
        # The state where iteration starts (the copy's state_dict() is that of the last
        # iteration of hf_dataset, if any): what the library computes at the start of __iter__.
        self._hf._prepare_ex_iterable_for_iteration()  # pylint: disable=protected-access
        self._restored: dict[str, Any] | None = self._hf.state_dict()  # set, not yet iterated
        self._it: Any = None

    def __next__(self) -> Any:
        if self._it is None:
            self._it = iter(self._hf)
            self._restored = None
        return next(self._it)

    def get_state(self) -> dict[str, Any]:
        if self._restored is not None:
            return copy.deepcopy(self._restored)
        return copy.deepcopy(self._hf.state_dict())

    def set_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or "examples_iterable" not in state:
            raise ValueError(
                f"not a Hugging Face IterableDataset state_dict() (no 'examples_iterable'): {state!r}"
            )
        self._restored = copy.deepcopy(state)
        self._hf.load_state_dict(copy.deepcopy(state))
        self._it = None

    def close(self) -> None:
        self._it = None


class HuggingFaceIterDataset(dataset.IterDataset):
    """A streaming Hugging Face ``datasets.IterableDataset`` as a Spelt IterDataset source.

    Elements are the examples the IterableDataset yields (dicts of Python values, or whatever
    its format gives). The state is the library's own ``IterableDataset.state_dict()`` (a
    JSON-compatible dict) at the last example returned; ``set_state`` restores it with
    ``load_state_dict`` in any process, with the library's guarantees: exact, except that
    examples in a shuffle buffer are lost on restore (see the ``datasets`` docs).

    Each iterator reads its own deep copy of ``hf_dataset``, so several iterators do not
    share a position. Picklable if ``hf_dataset`` is. TypeError for an object without
    ``state_dict``/``load_state_dict`` (a map-style ``Dataset`` is a data source: use
    ``MapDataset.source``).
    """

    def __init__(self, hf_dataset: Any):
        super().__init__()
        if not (hasattr(hf_dataset, "state_dict") and hasattr(hf_dataset, "load_state_dict")):
            hint = (
                "; a map-style Dataset is a data source: use MapDataset.source(dataset)"
                if hasattr(hf_dataset, "__getitem__") and hasattr(hf_dataset, "__len__")
                else ""
            )
            raise TypeError(
                "HuggingFaceIterDataset needs a datasets.IterableDataset (with state_dict and"
                f" load_state_dict), got {type(hf_dataset).__name__}{hint}"
            )
        self._hf = hf_dataset

    def __iter__(self) -> dataset.DatasetIterator:
        return _HuggingFaceIterator(self._hf)

    def __str__(self) -> str:
        return f"HuggingFaceIterDataset({self._hf!r})"
