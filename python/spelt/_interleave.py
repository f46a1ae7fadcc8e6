"""Round-robin interleaving of iterators, with Grain 0.2.18's InterleaveDatasetIterator order
and state (grain/_src/python/dataset/transformations/interleave.py), for the sources that
interleave their files (ParquetIterDataset over several paths).

Iterators ``0..n-1`` are opened in order into ``cycle_length`` slots; each ``next()`` takes one
element from the next slot, and a slot whose iterator ends takes the next unopened one. The
state names, per slot, the iterator index and its own state (or its final state once
exhausted), so a restore reopens only the iterators in the cycle. Elastic resharding
(``future_states``) is not supported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spelt import dataset


def _final_state(it: dataset.DatasetIterator) -> Any:
    """The state recorded for an exhausted iterator. Grain reads each interleaved IterDataset
    through a thread prefetch, whose state is the one after the last element it handed out,
    not after the failed next(); iterators whose state moves at the end (ParquetIterDataset's
    skips trailing empty row groups) say so with ``state_at_last_element()``."""
    at_last = getattr(it, "state_at_last_element", None)
    return at_last() if at_last is not None else it.get_state()


class InterleaveIterator(dataset.DatasetIterator):
    """Interleaves the iterators ``make[i]()``; one thread at a time."""

    def __init__(self, make: Sequence[Callable[[], dataset.DatasetIterator]], cycle_length: int):
        super().__init__()
        self._make = list(make)
        self._cycle = cycle_length
        self._next_in_cycle = 0
        self._next_in_datasets = 0
        self._indices = list(range(cycle_length))
        self._its: list[dataset.DatasetIterator | None] = [None] * cycle_length
        self._final_states: list[Any] = [None] * cycle_length  # of exhausted iterators

    def _advance(self) -> None:
        self._next_in_cycle = (self._next_in_cycle + 1) % self._cycle

    def _open_next(self, slot: int) -> dataset.DatasetIterator:
        it = self._its[slot] = self._make[self._next_in_datasets]()
        self._final_states[slot] = None
        self._indices[slot] = self._next_in_datasets
        self._next_in_datasets += 1
        return it

    def __next__(self) -> Any:
        while True:
            slot = self._next_in_cycle
            it = self._its[slot]
            if it is not None:
                try:
                    value = next(it)
                except StopIteration:
                    self._final_states[slot] = _final_state(it)
                    self._its[slot] = None
                    self._advance()
                    continue
                self._advance()
                return value
            if self._next_in_datasets < len(self._make):
                self._open_next(slot)
            elif all(i is None for i in self._its):
                raise StopIteration
            else:
                self._advance()

    def get_state(self) -> dict[str, Any]:
        # As Grain does, slots not yet opened are opened here, so that their states are known.
        states: list[Any] = [None] * self._cycle
        for slot in range(self._cycle):
            if self._its[slot] is not None:
                states[slot] = self._its[slot].get_state()
            elif self._final_states[slot] is not None:
                states[slot] = self._final_states[slot]
            elif self._next_in_datasets >= len(self._make):
                break
            else:
                states[slot] = self._open_next(slot).get_state()
        return {
            "next_index_in_cycle": self._next_in_cycle,
            "next_index_in_datasets": self._next_in_datasets,
            "iterators_in_use_indices": list(self._indices),
            "iterators_in_use_states": states,
            "exhausted": [int(s is not None) for s in self._final_states],
            "future_states": {},
        }

    def set_state(self, state: dict[str, Any]) -> None:
        try:
            indices = list(state["iterators_in_use_indices"])
            states = list(state["iterators_in_use_states"])
            exhausted = list(state["exhausted"])
            next_in_cycle, next_in_datasets = (
                state["next_index_in_cycle"],
                state["next_index_in_datasets"],
            )
        except (KeyError, TypeError) as e:
            raise ValueError(f"not an interleave state: {state!r}") from e
        if state.get("future_states"):
            raise ValueError("interleave states with future_states (elastic) are not supported")
        if not (len(indices) == len(states) == len(exhausted) == self._cycle) or any(
            not 0 <= i < len(self._make) for i in indices
        ):
            raise ValueError(
                f"interleave state does not fit {len(self._make)} datasets in a cycle of"
                f" {self._cycle}: {state!r}"
            )
        for slot, (index, it_state) in enumerate(zip(indices, states)):
            self._its[slot], self._final_states[slot] = None, None
            if it_state is not None and exhausted[slot]:
                self._final_states[slot] = it_state
            elif it_state is not None:
                it = self._make[index]()
                it.set_state(it_state)
                self._its[slot] = it
        self._next_in_cycle, self._next_in_datasets = next_in_cycle, next_in_datasets
        self._indices = indices

    def close(self) -> None:
        for it in self._its:
            if it is not None:
                it.close()
