"""Grain's ``ElasticIterator``: a checkpoint that restores with a different number of hosts.

Behaviour of grain/_src/python/dataset/elastic_iterator.py (Grain 0.2.18). An IterDataset
built on an interleave of shards (upstream Grain after 0.2.18) is handled by
``spelt.elastic_interleave``; what follows is the MapDataset case. The input is an
unbatched, unsharded MapDataset ``ds``; the iterator shards and batches it itself. With
``global_batch_size`` B over ``shard_count`` k hosts, host i reads
``ds[g + i :: k]`` in batches of B // k (drop_remainder=True), where g is the global position
(the number of elements all hosts consumed together). Every host advanced by the same number of
steps has the same state, ``{"global_next_index": g}`` with g = steps * B, so the state of any
one host restores every host of a new configuration (another k, another B): the elements
[0, g) were consumed, and the new hosts split [g, len(ds)) among themselves, so nothing is lost
or read twice.

Through Orbax (``spelt.checkpoint``, or the iterator's ``save``/``load``), a checkpoint written
by N processes restores on M != N: every process's file holds the same position, which each new
process restores (``merge_process_states``; docs/compatibility.md).

The slicing, batching and read-ahead are engine operations (``MapDataset.slice``, ``batch``,
``to_iter_dataset``, ``mp_prefetch``); this module only keeps the global position.
"""

from __future__ import annotations

import functools
from typing import Any, Awaitable

from spelt import _base
from spelt import _checkpoint_io
from spelt import dataset
from spelt import elastic_interleave
from spelt import options as options_lib
from spelt import sharding
from spelt.transformations import filter as filter_lib
from spelt.transformations import mix
from spelt.transformations import multithread_prefetch
from spelt.transformations import prefetch
from spelt.transformations import zip as zip_lib

_STATE_KEY = _checkpoint_io.POSITION_KEY


def _check_no_filter(ds: dataset.MapDataset) -> None:
    """ValueError if ``ds`` or an ancestor is a MapDataset filter (its elements could be None,
    so host batches would no longer hold a fixed share of a global batch)."""
    to_check = [ds]
    while to_check:
        node = to_check.pop()
        if isinstance(node, filter_lib.FilterMapDataset):
            raise ValueError("ElasticIterator does not support `filter` transformation.")
        to_check.extend(node.parents)


def _global_next_index(state: Any) -> int:
    """The position of an ElasticIterator state; ValueError if it is not one."""
    return _checkpoint_io.position(state)


def _check_int(global_batch_size: Any) -> None:
    if isinstance(global_batch_size, bool) or not isinstance(global_batch_size, int):
        raise TypeError(f"global_batch_size must be an int, got {type(global_batch_size).__name__}")


def _host_batch_size(global_batch_size: int, shard_options: sharding.ShardOptions) -> int:
    _check_int(global_batch_size)
    if global_batch_size <= 0:
        raise ValueError(f"global_batch_size must be positive, got {global_batch_size}")
    return elastic_interleave.host_batch_size(global_batch_size, shard_options.shard_count)


def _check_iter_transformations(ds: dataset.IterDataset) -> None:
    """ValueError (upstream's message) if ``ds`` or an ancestor is a zip, mix or prefetch
    (``to_iter_dataset``, ``mp_prefetch``): their states are not the interleave's."""
    to_check = [ds]
    while to_check:
        node = to_check.pop()
        if isinstance(
            node, (zip_lib.ZipIterDataset, prefetch.PrefetchIterDataset, mix.MixedIterDataset)
        ):
            raise ValueError(
                "ElasticIterator for IterDataset does not support zip, mix or"
                " prefetch transformation yet."
            )
        to_check.extend(node.parents)


class _ElasticDatasetIterator(dataset.DatasetIterator):
    """Iterator of one host: batches of ``ds[g + shard_index :: shard_count]``; the engine
    pipeline is built at the first ``next`` after construction or ``set_state``. Not
    thread-safe (one consumer, as Grain's)."""

    def __init__(self, config: ElasticIterator):
        super().__init__()
        self._config = config
        self._global_next_index = 0
        self._iterator: dataset.DatasetIterator | None = None

    def _host_iterator(self) -> dataset.DatasetIterator:
        if self._iterator is None:
            self._iterator = iter(self._config.host_stream(self._global_next_index))
        return self._iterator

    def __next__(self) -> Any:
        batch = next(self._host_iterator())
        self._global_next_index += self._config.global_batch_size
        return batch

    def get_state(self) -> dict[str, Any]:
        """``{"global_next_index": g}``: elements [0, g) of ``ds`` were consumed by all hosts
        together (g = steps * global_batch_size); the same on every host."""
        return {_STATE_KEY: self._global_next_index}

    def set_state(self, state: dict[str, Any]) -> None:
        """Resumes at the global position of ``state`` (from any host of any configuration).
        ValueError if ``state`` is not a dict with a non-negative int ``global_next_index``."""
        value = _global_next_index(state)
        iterator, self._iterator = self._iterator, None
        if iterator is not None:  # replaced by the next one: its sources stay open
            _base.close_keeping_sources(iterator)
        self._global_next_index = value

    def start_prefetch(self) -> None:
        """Starts the host pipeline's read-ahead before the first ``next``; idempotent."""
        self._host_iterator().start_prefetch()

    def merge_process_states(self, states: dict[str, str]) -> str:
        """The state to restore from the files of a checkpoint written by another number of
        processes (``spelt._checkpoint_io.Redistributable``): their common global position.

        Args:
            states: ``{file name: JSON text}`` of every process of the checkpoint.

        Returns:
            The JSON text of ``{"global_next_index": g}``: with it, process i of the new count k
            reads ``ds[g + i :: k]``, so over the union of the new processes the elements
            [0, g) stay consumed and [g, len(ds)) are read once each.

        Raises:
            ValueError: a file is not an ElasticIterator state, or the processes saved
                different positions (not at the same step), naming each file's position.
        """
        return _checkpoint_io.merge_positions(states)

    def close(self) -> None:
        iterator, self._iterator = self._iterator, None
        if iterator is not None:
            iterator.close()


class ElasticIterator(dataset.IterDataset):
    """Shards and batches ``ds`` for one host so that its checkpoint restores any host count.

    Args:
        ds: an unbatched, unsharded MapDataset (finite or repeated) without ``filter``, or an
            IterDataset built on an InterleaveIterDataset of shards (upstream Grain after
            0.2.18; ``spelt.elastic_interleave``), without zip, mix or prefetch above it.
        global_batch_size: int, elements per step over all hosts; divisible by
            ``shard_options.shard_count``. Each ``next`` returns this host's batch of
            ``global_batch_size // shard_count`` elements (stacked as ``batch`` does: leading
            dimension of that size). For an IterDataset, <= 0 means no batching.
        shard_options: this host's shard (``shard_index`` of ``shard_count``).
        read_options: ReadOptions of the read-ahead (``to_iter_dataset``).
        multiprocessing_options: if given, the host pipeline is ``mp_prefetch``-ed with them
            (MapDataset only).

    Raises:
        ValueError: ``ds`` contains a MapDataset ``filter`` (Grain's message), or
            ``global_batch_size`` is not a positive multiple of the shard count (Grain raises
            the latter at the first ``next``); for an IterDataset: a zip, mix or prefetch,
            no InterleaveIterDataset ("... requires an InterleaveIterDataset in the dataset
            graph."), or a source that cannot be sliced.
        NotImplementedError: ``multiprocessing_options`` with an IterDataset (upstream's).
        TypeError: ``global_batch_size`` is not an int, or ``ds`` is not a dataset.

    As in Grain, ``iter()`` returns one iterator, made at the first call and kept, and the
    dataset itself has ``next``/``get_state``/``set_state``/``close``, which act on it. A host
    whose shard runs out first stops first (the shards of the last steps can differ by one
    batch). Not thread-safe.
    """

    def __init__(
        self,
        ds: dataset.MapDataset | dataset.IterDataset,
        global_batch_size: int,
        shard_options: sharding.ShardOptions,
        *,
        read_options: options_lib.ReadOptions = options_lib.ReadOptions(),
        multiprocessing_options: options_lib.MultiprocessingOptions | None = None,
    ):
        super().__init__()
        if not isinstance(ds, (dataset.MapDataset, dataset.IterDataset)):
            raise TypeError(f"ElasticIterator needs a dataset, got {type(ds).__name__}")
        _check_no_filter(ds)
        self._ds = ds
        self.global_batch_size = global_batch_size
        self._shard_options = shard_options
        self._read_options = read_options
        self._multiprocessing_options = multiprocessing_options
        if isinstance(ds, dataset.MapDataset):
            self._host_batch_size = _host_batch_size(global_batch_size, shard_options)
            return
        if multiprocessing_options:
            raise NotImplementedError(
                "ElasticIterator does not support multiprocess prefetching for IterDataset."
            )
        _check_int(global_batch_size)
        _check_iter_transformations(ds)
        # A copy whose interleave holds this host's shards i, i + k, ... (upstream slices
        # a deep copy in place).
        self._ds = multithread_prefetch.sliced(
            ds, shard_options.shard_index, shard_options.shard_count, False
        )
        elastic_interleave.find_interleave(self._ds)  # ValueError if there is none
        if global_batch_size > 0:
            elastic_interleave.host_batch_size(global_batch_size, shard_options.shard_count)

    @property
    def shard_options(self) -> sharding.ShardOptions:
        """This host's shard (``shard_index`` of ``shard_count``)."""
        return self._shard_options

    def host_stream(self, global_next_index: int) -> dataset.IterDataset:
        """This host's batches from global position ``global_next_index`` on: the engine
        pipeline ``ds[g + shard_index :: shard_count].batch(host batch, drop_remainder=True)
        .to_iter_dataset()``, then ``mp_prefetch`` if multiprocessing options were given."""
        shard = self._shard_options
        host = self._ds[global_next_index + shard.shard_index :: shard.shard_count]
        stream = host.batch(self._host_batch_size, drop_remainder=True).to_iter_dataset(
            self._read_options
        )
        if self._multiprocessing_options is not None:
            stream = stream.mp_prefetch(self._multiprocessing_options)
        return stream

    @functools.cached_property
    def base_iterator(
        self,
    ) -> _ElasticDatasetIterator | elastic_interleave.ElasticIterDatasetIterator:
        """The iterator ``iter()`` returns (upstream's name), made at the first use."""
        if isinstance(self._ds, dataset.IterDataset):
            return elastic_interleave.ElasticIterDatasetIterator(
                self._ds,
                self.global_batch_size,
                self._shard_options,
                read_options=self._read_options,
            )
        return _ElasticDatasetIterator(self)

    def _shard_iterator(self, method: str) -> elastic_interleave.ElasticIterDatasetIterator:
        if not isinstance(self._ds, dataset.IterDataset):
            raise NotImplementedError(
                f"{method} is only supported for IterDataset-based ElasticIterator."
            )
        return self.base_iterator

    def get_shard_states(self) -> dict[int, Any]:
        """``{global shard index: state}`` of the shards this host reads (IterDataset only;
        ``ElasticIterDatasetIterator.get_shard_states``). NotImplementedError for a
        MapDataset (upstream's)."""
        return self._shard_iterator("get_shard_states").get_shard_states()

    def set_shard_states(self, shard_states: dict[int | str, Any]) -> None:
        """Restores this host's shards from ``{global shard index: state}`` of a checkpoint of
        any host count (IterDataset only; ``ElasticIterDatasetIterator.set_shard_states``).
        NotImplementedError for a MapDataset (upstream's)."""
        self._shard_iterator("set_shard_states").set_shard_states(shard_states)

    def __iter__(self) -> dataset.DatasetIterator:
        return self.base_iterator

    def __next__(self) -> Any:
        return next(self.base_iterator)

    def get_state(self) -> dict[str, Any]:
        return self.base_iterator.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        self.base_iterator.set_state(state)

    # Orbax: the ElasticIterator itself is a checkpointable, as its iterator is.
    def merge_process_states(self, states: dict[str, str]) -> str:
        """See ``_ElasticDatasetIterator.merge_process_states``."""
        return self.base_iterator.merge_process_states(states)

    def start_prefetch(self) -> None:
        """Starts the read-ahead of the iterator ``iter()`` returns (Orbax's restore calls it)."""
        self.base_iterator.start_prefetch()

    async def save(self, directory: Any) -> Awaitable[None]:
        """Orbax v1's checkpointable ``save`` (a coroutine) of the iterator ``iter()`` returns."""
        return await self.base_iterator.save(directory)

    async def load(self, directory: Any) -> Awaitable[None]:
        """Orbax v1's checkpointable ``load`` (a coroutine) into the iterator ``iter()``
        returns, from a checkpoint written by any number of processes."""
        return await self.base_iterator.load(directory)

    def close(self) -> None:
        if "base_iterator" in self.__dict__:
            self.base_iterator.close()

    def __str__(self) -> str:
        return (
            f"ElasticIterator(global_batch_size={self.global_batch_size},"
            f" shard_options={self._shard_options})"
        )
