"""Mixing datasets: ``MapDataset.concatenate``, ``MapDataset.mix``,
``MapDataset.select_from_datasets`` and ``IterDataset.mix`` (Grain's MixedMapDataset and
MixedIterDataset, grain/_src/python/dataset/transformations/mix.py). The engine ops are
cpp/src/ops/concatenate.cc, mix.cc and iter_mix.cc; the components are the parents."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from spelt import _args
from spelt import _base
from spelt import _core
from spelt import _tree


def _check_map_datasets(datasets: Any, what: str) -> tuple[_base.MapDataset, ...]:
    return _args.datasets_arg(datasets, (_base.MapDataset,), what)


class ConcatenateMapDataset(_base.ParentSpec, _base.MapDataset):
    """Grain's ConcatenateMapDataset: the datasets one after the other."""

    def __init__(self, datasets: Sequence[_base.MapDataset]):
        super().__init__(_check_map_datasets(datasets, "concatenate"))
        self.engine_node  # errors surface here, as in Grain  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.concatenate([p.engine_node for p in self._parents])

    def __str__(self) -> str:  # Grain's ConcatenateMapDataset is a MixedMapDataset
        return f"MixedMapDataset[{len(self._parents)} parents]"

    def __repr__(self) -> str:  # Grain's names its selection map's class (and address)
        return (
            f"MixedMapDataset(parent_lengths={[len(p) for p in self._parents]},"
            f" selection_map=<_ConcatSelectionMap of lengths {[len(p) for p in self._parents]}>)"
        )


class MixedMapDataset(_base.ParentSpec, _base.MapDataset):
    """Grain's MixedMapDataset by weights (default uniform)."""

    def __init__(self, datasets: Sequence[_base.MapDataset], weights: Sequence[float] | None):
        super().__init__(_check_map_datasets(datasets, "mix"))
        self._weights = _args.weights_arg(weights, "mix")
        empty = [f"index {i} ({p})" for i, p in enumerate(self._parents) if len(p) == 0]
        if empty and (weights is None or 0 not in self._weights):  # Grain's message
            raise ValueError(
                "All datasets must have positive length for mixing, but dataset(s) at"
                f" {', '.join(empty)} have length 0."
            )
        self.engine_node  # errors surface here, as in Grain  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.mix([p.engine_node for p in self._parents], self._weights)

    def __str__(self) -> str:
        return f"MixedMapDataset[{len(self._parents)} parents]"

    def __repr__(self) -> str:
        weights = self._weights or [1.0] * len(self._parents)
        scale = 100 / min(weights)
        proportions = tuple(int(w * scale) for w in weights) if self._weights else weights
        proportions = tuple(int(p) for p in proportions)
        return (
            f"MixedMapDataset(parent_lengths={[len(p) for p in self._parents]},"
            f" selection_map=SelectionWithProportionsMap(proportions={proportions},"
            f" length={len(self)}))"
        )


class SelectMapDataset(_base.ParentSpec, _base.MapDataset):
    """Grain's MixedMapDataset with a user's DatasetSelectionMap (called per index, since the
    map is user Python); reads each parent with one batched read per chunk."""

    def __init__(self, datasets: Sequence[_base.MapDataset], selection_map: Any):
        super().__init__(_check_map_datasets(datasets, "select_from_datasets"))
        self._selection_map = selection_map

    def __len__(self) -> int:
        return len(self._selection_map)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.slice(index)
        dataset_index, index_in_dataset = self._selection_map[index]
        return self._parents[dataset_index][index_in_dataset]

    def _getitems(self, indices: Sequence[int]) -> list[Any]:
        by_parent: dict[int, tuple[list[int], list[int]]] = {}
        for position, index in enumerate(indices):
            d, k = self._selection_map[index]
            keys, positions = by_parent.setdefault(d, ([], []))
            keys.append(k)
            positions.append(position)
        out: list[Any] = [None] * len(indices)
        for d, (keys, positions) in by_parent.items():
            for position, element in zip(positions, self._parents[d]._getitems(keys)):  # pylint: disable=protected-access
                out[position] = element
        return out

    def __str__(self) -> str:
        return f"MixedMapDataset[{len(self._parents)} parents]"

    def __repr__(self) -> str:
        return (
            f"MixedMapDataset(parent_lengths={[len(p) for p in self._parents]},"
            f" selection_map={self._selection_map!r})"
        )


class MixedIterDataset(_base.ParentSpec, _base.IterDataset):
    """Grain's ``IterDataset.mix``: element k from the parent that ``MapDataset.mix`` would
    pick for k, until the picked parent is exhausted. ``parents`` may be a mapping (then
    ``proportions`` too), whose state is keyed, so a checkpoint restores by key. State:
    ``{"parents", "index", "stop"}``."""

    def __init__(
        self,
        parents: Sequence[_base.IterDataset] | Mapping[str, _base.IterDataset],
        proportions: Sequence[float] | Mapping[str, float] | None = None,
    ):
        if isinstance(parents, Mapping):
            # The order in which Grain's tree_lib flattens: sorted with JAX, else insertion.
            self._keys = sorted(parents) if _tree.uses_jax() else list(parents)
            flat = [parents[k] for k in self._keys]
            if isinstance(proportions, Mapping):
                proportions = [proportions[k] for k in self._keys]
        else:
            self._keys = []
            flat = parents
        flat = _args.datasets_arg(flat, (_base.IterDataset, _base.MapDataset), "mix")
        super().__init__(flat)
        self._weights = _args.weights_arg(proportions, "mix")
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.mix_iter(self._stream_nodes(), self._weights, self._keys)

    def __str__(self) -> str:
        weights = self._weights or [1] * len(self._parents)  # Grain scales these too
        proportions = [int(w * (100 / min(weights))) for w in weights]
        return f"MixedIterDataset([{len(self._parents)} parents], proportions={proportions})"
