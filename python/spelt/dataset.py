"""Grain's Dataset API (``grain.MapDataset``, ``grain.IterDataset``, ``grain.DatasetIterator``):
the face that wires the operations of ``spelt.transformations`` into the bases of
spelt/_base.py and re-exports what Grain's ``dataset`` module has.

The bases import no operation; each method that builds one (``ds.map``, ``ds.shuffle``,
``ds.to_iter_dataset``, ``ds.mp_prefetch``, ...) finds its class in a class attribute set
here. Importing ``spelt`` imports this module, so the wiring is in place before any dataset
exists.
"""

from __future__ import annotations

from typing import Any, Callable

from spelt import _base
from spelt import _summary
from spelt import options as options_lib
from spelt import ray
from spelt.transformations import batch
from spelt.transformations import filter as filter_lib
from spelt.transformations import flat_map
from spelt.transformations import map as map_lib
from spelt.transformations import mix
from spelt.transformations import prefetch
from spelt.transformations import repeat
from spelt.transformations import seed
from spelt.transformations import shuffle
from spelt.transformations import slice as slice_lib
from spelt.transformations import source

DatasetIterator = _base.DatasetIterator
IterDataset = _base.IterDataset
MapDataset = _base.MapDataset
FlatMapIterDataset = flat_map.FlatMapIterDataset
ProcessPrefetchIterDataset = prefetch.ProcessPrefetchIterDataset
WithOptionsIterDataset = _base.WithOptionsIterDataset


def _mp_prefetch(
    ds: IterDataset,
    options: options_lib.MultiprocessingOptions | ray.RayOptions | None,
    worker_init_fn: Callable[[int, int], None] | None,
    autotune: bool,
    ram_budget_mb: int | None,
) -> IterDataset:
    """``IterDataset.mp_prefetch``: the to_iter_dataset stages read by Ray actors for
    ``RayOptions``, else by worker processes (or threads where no Python is called)."""
    if isinstance(options, ray.RayOptions):
        if autotune:
            raise ValueError("mp_prefetch: autotune=True needs worker processes, not Ray")
        return ray.prefetch(ds, options)
    return prefetch.mp_prefetch(ds, options, worker_init_fn, autotune, ram_budget_mb)


# The class (or function) each method of the bases builds, by the attribute it reads.
_OPERATIONS: dict[type, dict[str, Any]] = {
    MapDataset: {
        "_Seed": seed.SeedMapDataset,
        "_Map": map_lib.MapMapDataset,
        "_RandomMap": map_lib.RandomMapMapDataset,
        "_MapWithIndex": map_lib.MapWithIndexMapDataset,
        "_Filter": filter_lib.FilterMapDataset,
        "_Batch": batch.BatchMapDataset,
        "_FlatMap": flat_map.FlatMapMapDataset,
        "_Source": source.SourceMapDataset,
        "_Range": source.RangeMapDataset,
        "_Concatenate": mix.ConcatenateMapDataset,
        "_Mix": mix.MixedMapDataset,
        "_Select": mix.SelectMapDataset,
        "_Shuffle": shuffle.ShuffleMapDataset,
        "_Slice": slice_lib.SliceMapDataset,
        "_Reindex": slice_lib.ReindexMapDataset,
        "_Repeat": repeat.RepeatMapDataset,
        "_ToIter": prefetch.PrefetchIterDataset,
    },
    IterDataset: {
        "_Seed": seed.SeedIterDataset,
        "_Map": map_lib.MapIterDataset,
        "_RandomMap": map_lib.RandomMapIterDataset,
        "_MapWithIndex": map_lib.MapWithIndexIterDataset,
        "_Filter": filter_lib.FilterIterDataset,
        "_Batch": batch.BatchIterDataset,
        "_FlatMap": flat_map.FlatMapIterDataset,
        "_Mix": mix.MixedIterDataset,
        "_mp_prefetch": staticmethod(_mp_prefetch),
        "_tracked_iterator": staticmethod(_summary.tracked_iterator),
    },
}


def _wire() -> None:
    for kind, operations in _OPERATIONS.items():
        for name, operation in operations.items():
            setattr(kind, name, operation)


_wire()


def apply_transformations(ds: Any, transformations: Any) -> Any:
    """Deprecated alias of ``ds.apply(transformations)`` (Grain's ``apply_transformations``)."""
    return ds.apply(transformations)


def get_next_index(ds_iter: DatasetIterator) -> int:
    """The index of the element the iterator returns next (Grain's ``get_next_index``).
    NotImplementedError for iterators that cannot tell (e.g. after a filter)."""
    return ds_iter._get_next_index()  # pylint: disable=protected-access


def set_next_index(ds_iter: DatasetIterator, index: int) -> None:
    """Moves the iterator so that it returns element ``index`` next, without reading the
    elements before it (Grain's ``set_next_index``)."""
    ds_iter._set_next_index(index)  # pylint: disable=protected-access
