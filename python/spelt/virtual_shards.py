"""Elastic resume of any pipeline: a fixed number of virtual shards that hosts own in turn.

Beyond Grain (whose ``ElasticIterator`` takes only a MapDataset without ``filter``): the data is
cut into ``num_virtual_shards`` K virtual shards, and the user's pipeline (filter, packing,
``mix``, any IterDataset) runs on each shard separately, ``make_shard(ShardOptions(v, K))``. Of
M hosts, host h owns the shards ``v`` with ``v % M == h`` and reads them round robin (one
output of each in turn, skipping those exhausted; with ``batch_size``, each shard is batched
first and its batches are read round robin). Its state is the state of each of its shards'
pipelines plus whose turn is next, so a checkpoint of N hosts holds the K shard states; M
other hosts each take the states of their own shards, from whichever host's file held them (``merge_states``, or Orbax's ``CheckpointRestore`` and the
iterators' ``load``, which merge every process's file: ``spelt._checkpoint_io``).

Guarantees (docs/multihost.md, Resuming any pipeline: virtual shards): over all hosts, before and
after any number of changes of host count, every element of every shard's pipeline is read
exactly once (nothing lost, nothing repeated), as long as all hosts of a checkpoint saved it
(their steps may differ). With the same host count the order is exactly that of the
uninterrupted run; after a change, each host continues its shards from their saved positions,
round robin from its lowest shard not exhausted. Batches are cut in each shard, so they are
the same on every host count (with ``drop_remainder``, each shard's last partial batch is
dropped, on every host count alike).

The shard pipelines, their batching and the round robin are one engine pipeline
(``_core.virtual_shards``, cpp/src/ops/virtual_shards.cc, which also reads and writes the
state): reading a batch costs the same Python call as reading one of the plain pipeline.
"""

from __future__ import annotations

from typing import Any, Callable

from spelt import _base
from spelt import _checkpoint_io
from spelt import _core
from spelt import sharding


class VirtualShardIterDataset(_base.IterDataset):
    """One host's stream of a pipeline cut into virtual shards, resumable on any host count.

    Args:
        make_shard: ``make_shard(ShardOptions(v, num_virtual_shards))`` builds the pipeline of
            virtual shard v (an IterDataset, or a MapDataset read with ``to_iter_dataset()``),
            e.g. ``lambda s: ds[s.shard_index::s.shard_count].to_iter_dataset().filter(f)``.
            The shards' pipelines must be disjoint and deterministic (the same elements in the
            same order each time they are built); called once per owned shard, here (every
            iterator of the dataset reads the same shard pipelines from their start).
        num_virtual_shards: K, fixed for the life of the job (checkpoints restore only with the
            same K); at least the largest host count, best a multiple of every host count used
            (hosts then own K / M shards each).
        shard_options: this host's shard (``shard_index`` h of ``shard_count`` M; e.g.
            ``ShardByJaxProcess()``): it reads shards ``v % M == h``.
        batch_size: if given, each shard's elements are batched (``batch``: leading dimension
            of this size) in the shard: a batch holds consecutive elements of one shard, the
            host reads its shards' batches round robin, and the batches are the same whatever
            the host count. One Python call per batch rather than per element keeps the cost of
            elasticity small (bench/bench_virtual_shards.py).
        drop_remainder: drop each shard's last partial batch (with ``batch_size``): the same
            batches are dropped on every host count.

    Raises:
        ValueError: ``num_virtual_shards`` < ``shard_count`` (a host would own no shard) or not
            positive, or ``batch_size`` not positive.
        TypeError: ``num_virtual_shards`` or ``batch_size`` is not an int.

    Outputs: those of the host's shards' pipelines (batches of them with ``batch_size``), one
    per shard in turn (shard order h, h + M, ...), skipping exhausted shards; see the module
    docstring for the guarantees across restores. Its parents are the host's shard pipelines,
    so ``mp_prefetch`` after it computes each shard's MapDataset part (below its
    ``to_iter_dataset``) in worker processes, ``num_workers`` per shard, and the state stays
    that of the shards (any worker count restores it). Its iterator is an engine iterator:
    ``next``, ``get_state``, ``set_state`` and ``close`` are serialised (each output goes to
    exactly one caller); ``set_state`` raises ValueError for a state that is not a
    VirtualShardIterDataset state, has another number of virtual shards, or lacks a shard of
    this host (restore on another host count from ``merge_states`` of every host's state, or
    through Orbax, which merges every process's file: ``spelt._checkpoint_io``).
    """

    def __init__(
        self,
        make_shard: Callable[[sharding.ShardOptions], Any],
        num_virtual_shards: int,
        shard_options: sharding.ShardOptions,
        *,
        batch_size: int | None = None,
        drop_remainder: bool = False,
    ):
        for value, name in ((num_virtual_shards, "num_virtual_shards"), (batch_size, "batch_size")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if num_virtual_shards < shard_options.shard_count:
            raise ValueError(
                f"num_virtual_shards ({num_virtual_shards}) must be at least the shard count"
                f" ({shard_options.shard_count}): each host reads at least one virtual shard"
            )
        self._make_shard = make_shard
        self.num_virtual_shards = num_virtual_shards
        self.shard_options = shard_options
        self._batch = (batch_size, drop_remainder)
        owned = range(shard_options.shard_index, num_virtual_shards, shard_options.shard_count)
        super().__init__([self.make_shard(v) for v in owned])

    merge_states = staticmethod(_checkpoint_io.merge_virtual_shard_states)

    def make_shard(self, virtual_shard: int) -> Any:
        """The pipeline of one virtual shard: ``make_shard`` of the constructor, then ``batch``
        if a batch size was given."""
        shard = self._make_shard(sharding.ShardOptions(virtual_shard, self.num_virtual_shards))
        if isinstance(shard, _base.MapDataset):
            shard = shard.to_iter_dataset()
        batch_size, drop_remainder = self._batch
        if batch_size is not None:
            shard = shard.batch(batch_size, drop_remainder=drop_remainder)
        return shard

    def _make_node(self):
        options = self.shard_options
        return _core.virtual_shards(
            self._stream_nodes(),
            self.num_virtual_shards,
            options.shard_index,
            options.shard_count,
        )

    def __str__(self) -> str:
        return (
            f"VirtualShardIterDataset(num_virtual_shards={self.num_virtual_shards},"
            f" shard_options={self.shard_options})"
        )
