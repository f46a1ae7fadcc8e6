"""Grain's ``get_next_index`` / ``set_next_index``: where an iterator's state says the index of
its next element, per kind of operation.

A dataset's ``_index_plan()`` describes its iterators' states; None where Grain's iterator
cannot tell its next index (after a filter, for example). The mixins give an operation the
plan of its kind, from its parent's.
"""

from __future__ import annotations

from typing import Any


class IndexPlan:
    """The state of ``to_iter_dataset`` (Grain's PrefetchDatasetIterator): ``{"next_index": n}``."""

    def next_index(self, state: dict[str, Any]) -> int:
        return state["next_index"]

    def state_at(self, index: int, state: dict[str, Any]) -> dict[str, Any]:
        """The state of the same iterator about to return element ``index``, reached without
        reading any element."""
        return {"next_index": index}


class _CountedPlan(IndexPlan):
    """``state[field]`` counts the elements returned, next to the parent's state (Grain's
    random_map, map_with_index, limit)."""

    def __init__(self, parent: IndexPlan, field: str):
        self._parent, self._field = parent, field

    def next_index(self, state: dict[str, Any]) -> int:
        return state[self._field]

    def state_at(self, index: int, state: dict[str, Any]) -> dict[str, Any]:
        return {"parent": self._parent.state_at(index, state["parent"]), self._field: index}


class _BatchedPlan(IndexPlan):
    """Batches of batch_size parent elements; the state is the parent's (Grain's batch)."""

    def __init__(self, parent: IndexPlan, batch_size: int):
        self._parent, self._batch_size = parent, batch_size

    def next_index(self, state: dict[str, Any]) -> int:
        return -(-self._parent.next_index(state) // self._batch_size)

    def state_at(self, index: int, state: dict[str, Any]) -> dict[str, Any]:
        return self._parent.state_at(index * self._batch_size, state)


def of(ds: Any) -> IndexPlan | None:
    """The index plan of the dataset ``ds`` (its ``_index_plan()``)."""
    return ds._index_plan()  # pylint: disable=protected-access


class SameIndex:
    """An op whose iterator state is its parent's (Grain's map, thread prefetch)."""

    def _index_plan(self) -> IndexPlan | None:
        return of(self.parents[0])


class CountedIndex:
    """An op that counts the elements it returned in ``state[_COUNT]`` (limit:
    ``"count_elements_read"``)."""

    _COUNT: str

    def _index_plan(self) -> IndexPlan | None:
        parent = of(self.parents[0])
        return None if parent is None else _CountedPlan(parent, self._COUNT)


class RngCount(CountedIndex):
    """random_map: ``state["index_for_rng"]``."""

    _COUNT = "index_for_rng"


class Counter(CountedIndex):
    """map_with_index: ``state["counter"]``."""

    _COUNT = "counter"


class BatchIndex:
    """batch: the parent's index divided by the batch size (``args[0]``)."""

    def _index_plan(self) -> IndexPlan | None:
        parent = of(self.parents[0])
        return None if parent is None else _BatchedPlan(parent, self.args[0])
