"""Grain 0.2.18's ``multithread_prefetch``
(grain/_src/python/dataset/transformations/prefetch.py): a pipeline split into shards, each
read by a thread of an interleave. A composite: it builds on interleave, to_iter_dataset and
random_map, whose modules it imports."""

from __future__ import annotations

from typing import Any, Callable

from spelt import _args
from spelt import _base
from spelt import _callables
from spelt.transformations import interleave
from spelt.transformations import map as map_lib
from spelt.transformations import prefetch


class _ShardRandomMap:
    """A random_map function of shard ``index`` of ``count``: the k-th element of the shard
    gets the rng at counter index + k * count (Grain's random_map under a
    MultiprocessingContext), so shards draw different numbers and, over strided shards of one
    stream, each element the numbers of the unsharded pipeline."""

    def __init__(self, fn: Any, index: int, count: int):
        self._fn, self._index, self._count = fn, index, count

    def __call__(self, element: Any, rng: Any) -> Any:
        state = rng.bit_generator.state["state"]
        key = int(state["key"][0]) | int(state["key"][1]) << 64
        k = int(state["counter"][3])
        return self._fn(element, _callables.philox_generator(key, self._index + k * self._count))


def _block(length: int, index: int, count: int) -> slice:
    """Shard ``index`` of ``count`` contiguous near-equal blocks of ``length`` elements (the
    first ``length % count`` one longer)."""
    size, rest = divmod(length, count)
    start = index * size + min(index, rest)
    return slice(start, start + size + (index < rest))


def sliced(ds: Any, index: int, count: int, sequential: bool) -> Any:
    """A copy of the pipeline ``ds`` for shard ``index`` of ``count`` (Grain's
    _set_slice_iter_dataset with slice(index, None, count), without mutating ``ds``):
    to_iter_dataset stages read their MapDataset sliced (strided, or in contiguous blocks if
    ``sequential``), datasets with ``set_slice`` slice themselves, random_map draws the
    shard's numbers. ValueError for a source that cannot be sliced."""

    def visit(node: Any, descend: Callable[[Any], Any]) -> Any:
        if isinstance(node, prefetch.PrefetchIterDataset):
            parent = node.parents[0]
            sl = _block(len(parent), index, count) if sequential else slice(index, None, count)
            return prefetch.PrefetchIterDataset(
                parent.slice(sl), node.read_options, node.allow_nones
            )
        if hasattr(node, "set_slice"):
            sliced = _base.with_parents(node, node.parents)
            sliced.set_slice(slice(index, None, count), sequential)
            return sliced
        if not node.parents:
            raise ValueError(f"Cannot slice `IterDataset` source. {type(node)}")
        sliced = descend(node)
        if isinstance(node, map_lib.RandomMapIterDataset):
            fn, seed = node.args
            sliced = map_lib.RandomMapIterDataset(
                sliced.parents[0], _ShardRandomMap(fn, index, count), seed
            )
        return sliced

    return _base.rewrite(ds, visit)


def multithread_prefetch(
    ds: _base.IterDataset,
    num_threads: int,
    buffer_size: int,
    sequential_slice: bool = False,
) -> _base.IterDataset:
    """Grain's ``multithread_prefetch``: ``ds`` split into ``num_threads`` shards (shard i
    reads elements i, i + num_threads, ... of each source), each read by a thread with a
    buffer of ``buffer_size`` elements, interleaved in turn; ``num_threads`` 0 returns ``ds``.
    With ``sequential_slice``, shard i reads the i-th of num_threads contiguous blocks
    instead. The state is the InterleaveIterDataset's (one state per shard). random_map in a
    shard draws as Grain's does under a MultiprocessingContext (different numbers per shard).
    ValueError if a source of ``ds`` cannot be sliced."""
    num_threads = _args.int_arg(num_threads, "multithread_prefetch: num_threads")
    buffer_size = _args.int_arg(buffer_size, "multithread_prefetch: buffer_size")
    if num_threads == 0:
        return ds
    options = _base.pipeline_options(ds)
    shards = [
        ds if num_threads == 1 else sliced(ds, i, num_threads, sequential_slice)
        for i in range(num_threads)
    ]
    out = interleave.InterleaveIterDataset(
        shards, cycle_length=num_threads, iter_buffer_size=buffer_size
    )
    return _base.WithOptionsIterDataset(out, options)
