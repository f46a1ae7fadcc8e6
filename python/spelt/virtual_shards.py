"""Elastic resume of any pipeline: a fixed number of virtual shards that hosts own in turn.

Beyond Grain (whose ``ElasticIterator`` takes only a MapDataset without ``filter``): the data is
cut into ``num_virtual_shards`` K virtual shards, and the user's pipeline (filter, packing,
``mix``, any IterDataset) runs on each shard separately, ``make_shard(ShardOptions(v, K))``. Of
M hosts, host h owns the shards ``v`` with ``v % M == h`` and reads them round robin (one
output of each in turn, skipping those exhausted; with ``batch_size``, each shard is batched
first and its batches are read round robin). Its state is the state of each of its shards'
pipelines plus whose turn is next, so a checkpoint of N hosts holds the K shard states; M other hosts each take the states of their own shards, from
whichever host's file held them (``merge_states``, or Orbax's ``CheckpointRestore`` and the
iterators' ``load``, which merge every process's file: ``spelt._checkpoint_io``).

Guarantees (docs/multihost.md, Resuming on another host count): over all hosts, before and
after any number of changes of host count, every element of every shard's pipeline is read
exactly once (nothing lost, nothing repeated), as long as all hosts of a checkpoint saved it
(their steps may differ). With the same host count the order is exactly that of the
uninterrupted run; after a change, each host continues its shards from their saved positions,
round robin from its lowest shard not exhausted. Batches are cut in each shard, so they are
the same on every host count (with ``drop_remainder``, each shard's last partial batch is
dropped, on every host count alike).

The shard pipelines and their batching are engine pipelines; this module reads them round robin
(one Python call per output: per batch with ``batch_size``) and gathers their states.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from spelt import _base
from spelt import _checkpoint_io
from spelt import sharding

_K, _INDEX, _COUNT, _NEXT, _SHARDS = _checkpoint_io.VIRTUAL_SHARD_KEYS
_check_state = _checkpoint_io.check_virtual_shard_state


def _owned(shard_options: sharding.ShardOptions, num_virtual_shards: int) -> list[int]:
    """The virtual shards of one host: ``range(shard_index, K, shard_count)``."""
    return list(range(shard_options.shard_index, num_virtual_shards, shard_options.shard_count))


class VirtualShardDatasetIterator(_base.DatasetIterator):
    """One host's iterator of a VirtualShardIterDataset: the engine iterators of its shards'
    pipelines, read round robin. Thread-safety: ``next``, ``get_state``, ``set_state`` and
    ``close`` are serialised (each output goes to exactly one caller), as every Spelt
    iterator's."""

    def __init__(self, ds: VirtualShardIterDataset):
        super().__init__()
        self._ds = ds
        self._owned = _owned(ds.shard_options, ds.num_virtual_shards)
        shards = [ds.make_shard(v) for v in self._owned]
        self._its = [iter(shard) for shard in shards]
        self._nexts = [it.__next__ for it in self._its]
        # The shards' pipelines share their sources: close() closes each source once.
        self._sources = list({id(s): s for d in shards for s in _base.closable_sources(d)}.values())
        self._live = list(range(len(self._owned)))  # slots not exhausted, in shard order
        self._turn = 0  # position in self._live of the shard read next
        self._lock = threading.Lock()

    def __next__(self) -> Any:
        with self._lock:
            return self._next()

    def _next(self) -> Any:
        live = self._live
        while live:
            turn = self._turn
            try:
                element = self._nexts[live[turn]]()
            except StopIteration:
                del live[turn]
                if turn == len(live):
                    self._turn = 0
                continue
            self._turn = turn + 1 if turn + 1 < len(live) else 0
            return element
        raise StopIteration

    def get_state(self) -> dict[str, Any]:
        """``{"num_virtual_shards": K, "shard_index": h, "shard_count": M, "next_shard": v,
        "shards": {str(v): {"exhausted": 0/1, "state": shard pipeline state}}}`` for this host's
        shards; ``next_shard`` is the shard whose output comes next (-1: all exhausted). Small:
        K / M shard-pipeline states."""
        with self._lock:
            return self._state()

    def _state(self) -> dict[str, Any]:
        live = set(self._live)
        options = self._ds.shard_options
        return {
            _K: self._ds.num_virtual_shards,
            _INDEX: options.shard_index,
            _COUNT: options.shard_count,
            _NEXT: self._owned[self._live[self._turn]] if self._live else -1,
            _SHARDS: {
                str(v): {"exhausted": int(slot not in live), "state": it.get_state()}
                for slot, (v, it) in enumerate(zip(self._owned, self._its))
            },
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restores this host's shards from ``state``: this host's own state (same host count:
        resumes exactly where it was), or one holding the shards of every host (``merge_states``,
        from any host count: resumes each shard where it was, round robin from the lowest).

        Raises:
            ValueError: ``state`` is not a VirtualShardIterDataset state, has another number of
                virtual shards, or lacks a shard of this host (naming them).
        """
        _check_state(state)
        with self._lock:
            self._restore(state)

    def _restore(self, state: dict[str, Any]) -> None:
        num_virtual_shards = self._ds.num_virtual_shards
        if state[_K] != num_virtual_shards:
            raise ValueError(
                f"the state has {state[_K]} virtual shards, this dataset {num_virtual_shards}"
            )
        missing = [str(v) for v in self._owned if str(v) not in state[_SHARDS]]
        if missing:
            raise ValueError(
                f"the state lacks virtual shards {', '.join(missing)} of this host (shard"
                f" {self._ds.shard_options.shard_index} of {self._ds.shard_options.shard_count});"
                " restore on another host count from merge_states() of all hosts' states"
            )
        shards = [state[_SHARDS][str(v)] for v in self._owned]
        for it, shard in zip(self._its, shards):
            it.set_state(shard["state"])
        self._live = [slot for slot, shard in enumerate(shards) if not shard["exhausted"]]
        next_slots = [p for p, slot in enumerate(self._live) if self._owned[slot] == state[_NEXT]]
        self._turn = next_slots[0] if next_slots else 0

    def start_prefetch(self) -> None:
        for it in self._its:
            it.start_prefetch()

    def close(self) -> None:
        """Closes the shards' iterators, then calls ``close()`` once on each plain data source
        they read (as every Spelt iterator). Idempotent."""
        with self._lock:
            for it in self._its:
                _base.close_keeping_sources(it)
            sources, self._sources = self._sources, []
        _base.close_sources(sources)


class VirtualShardIterDataset(_base.IterDataset):
    """One host's stream of a pipeline cut into virtual shards, resumable on any host count.

    Args:
        make_shard: ``make_shard(ShardOptions(v, num_virtual_shards))`` builds the pipeline of
            virtual shard v (an IterDataset, or a MapDataset read with ``to_iter_dataset()``),
            e.g. ``lambda s: ds[s.shard_index::s.shard_count].to_iter_dataset().filter(f)``.
            The shards' pipelines must be disjoint and deterministic (the same elements in the
            same order each time they are built); called once per owned shard per iterator.
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
    docstring for the guarantees across restores.
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
        super().__init__()
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

    def __iter__(self) -> VirtualShardDatasetIterator:
        return VirtualShardDatasetIterator(self)

    def __str__(self) -> str:
        return (
            f"VirtualShardIterDataset(num_virtual_shards={self.num_virtual_shards},"
            f" shard_options={self.shard_options})"
        )
