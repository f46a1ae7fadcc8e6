"""Upstream Grain's ``ElasticIterDatasetIterator`` (after 0.2.18, google/grain b01eac4): the
ElasticIterator of an IterDataset built on an interleave of shards.

The interleave's datasets are the global shards. Host i of k reads shards i, i + k, ... (the
interleave sliced ``[i::k]``, as ``ElasticIterator`` makes it) and batches the pipeline by
``global_batch_size // k``. Its ``get_shard_states()`` is ``{global shard index: state}``, the
state of each shard it reads (local shard j is global shard ``j * k + i``); any process count
restores from the union of those of all hosts: host i' of k' takes shards i', i' + k', ...
(``set_shard_states``), each resuming after the last element it returned, so across the union
of the hosts no element is lost or repeated. The order after such a restore differs from a
run without it (the cycle restarts over each host's shards), as upstream's does.

Checkpoints (``spelt.checkpoint`` and the iterator's Orbax v1 ``save``/``load``) write one file
per global shard, ``shard_state_<k>.json`` (``spelt._shard_checkpoint``).
"""

from __future__ import annotations

import json
from typing import Any, Awaitable

from spelt import _base
from spelt import _shard_checkpoint
from spelt import options as options_lib
from spelt import sharding
from spelt.transformations import interleave


def find_interleave(ds: Any) -> interleave.InterleaveIterDataset:
    """The first InterleaveIterDataset met walking up from ``ds`` through its parents;
    ValueError (upstream's message) if there is none."""
    to_check = [ds]
    while to_check:
        node = to_check.pop(0)
        if isinstance(node, interleave.InterleaveIterDataset):
            return node
        to_check.extend(p for p in node.parents if isinstance(p, _base.IterDataset))
    raise ValueError(
        "ElasticIterDatasetIterator requires an InterleaveIterDataset in the dataset graph."
    )


def _find_interleave_state(state: Any) -> dict[str, Any] | None:
    """The outermost interleave state (a dict with the interleave's keys) nested in ``state``
    (breadth first), or None."""
    to_check = [state]
    while to_check:
        node = to_check.pop(0)
        if isinstance(node, dict):
            if interleave.STATE_KEYS <= set(node):
                return node
            to_check.extend(node.values())
        elif isinstance(node, (list, tuple)):
            to_check.extend(node)
    return None


def host_batch_size(global_batch_size: int, shard_count: int) -> int:
    """``global_batch_size // shard_count``; ValueError (upstream's message) if it does not
    divide."""
    size, remainder = divmod(global_batch_size, shard_count)
    if remainder:
        raise ValueError(
            f"Global batch size {global_batch_size} is not divisible by shard count {shard_count}."
        )
    return size


# The keys of a state after a restore that left exhausted shards out (``get_state``).
_DONE_KEY, _PIPELINE_KEY = "spelt_exhausted_shards", "spelt_pipeline_state"


class ElasticIterDatasetIterator(_base.DatasetIterator):
    """One host's iterator of an IterDataset whose interleave is already sliced to its shards.

    Args:
        parent: IterDataset with an InterleaveIterDataset in its graph (the interleave of the
            host's shards ``i, i + k, ...``), whose transformations above the interleave keep
            its state (map, batch, ...).
        global_batch_size: int; > 0: each ``next`` returns a batch of
            ``global_batch_size // shard_count`` elements (the last may be shorter,
            ``drop_remainder=False`` as upstream); <= 0: single elements.
        shard_options: this host's shard (``shard_index`` of ``shard_count``).
        read_options: ReadOptions (kept for upstream's signature).

    Raises:
        ValueError: ``parent`` has no InterleaveIterDataset ("... requires an
            InterleaveIterDataset in the dataset graph."), or ``global_batch_size`` is not
            divisible by the shard count (upstream's messages).

    Not thread-safe (one consumer, as upstream's).
    """

    def __init__(
        self,
        parent: _base.IterDataset,
        global_batch_size: int,
        shard_options: sharding.ShardOptions,
        *,
        read_options: options_lib.ReadOptions,
    ):
        super().__init__()
        found = find_interleave(parent)
        self._pipeline, self._interleave = parent, found
        self._shard_options = shard_options
        self._read_options = read_options
        self._batch_size = 0
        if global_batch_size > 0:
            self._batch_size = host_batch_size(global_batch_size, shard_options.shard_count)
        count, index = shard_options.shard_count, shard_options.shard_index
        # The global indices of this host's shards, and the states of those left out of the
        # interleave because a restore found them exhausted.
        self._global = [j * count + index for j in range(len(found.shard_states()))]
        self._done: dict[int, Any] = {}
        self._start(self._global)

    def _start(self, active: list[int]) -> None:
        """(Re)builds the pipeline with an interleave of the shards ``active`` (global
        indices, a subset of this host's) alone."""
        interleaved = self._interleave
        if active != self._global:  # (a lazy MapDataset of datasets stays lazy otherwise)
            local = {k: j for j, k in enumerate(self._global)}
            interleaved = interleaved.select([local[k] for k in active])

        def visit(node: Any, descend: Any) -> Any:
            return interleaved if node is self._interleave else descend(node)

        ds = _base.rewrite(self._pipeline, visit)
        if self._batch_size:
            ds = ds.batch(self._batch_size, drop_remainder=False)
        self._active, self._shards = active, interleaved.shard_states()
        self._iterator = iter(ds)

    @property
    def shard_options(self) -> sharding.ShardOptions:
        """This host's shard (``shard_index`` of ``shard_count``)."""
        return self._shard_options

    def __next__(self) -> Any:
        return next(self._iterator)

    def _interleave_state(self, state: Any) -> dict[str, Any]:
        found = _find_interleave_state(state)
        if found is None:
            raise ValueError(f"no interleave state in the pipeline's state {state!r}")
        return found

    def get_shard_states(self) -> dict[int, Any]:
        """``{global shard index: {"exhausted": 0/1, "state": ...}}`` for the shards this host
        reads (upstream's layout): local shard j is global shard ``j * shard_count +
        shard_index``."""
        shards = self._shards.split(self._interleave_state(self._iterator.get_state()))
        states = dict(zip(self._active, shards))
        states.update(self._done)
        return {k: states[k] for k in self._global}

    def set_shard_states(self, state: dict[int | str, Any]) -> None:
        """Restarts the pipeline with its shards at ``state`` (``{global shard index: shard
        state}``, keys may be strings as after JSON): the states of this host's shards, of a
        checkpoint of any host count. The exhausted shards are left out of the interleave (so
        none is read again, even one out of the cycle), the others resume after the last
        element they returned; the transformations above the interleave start afresh.

        Raises:
            ValueError: ``state`` does not hold exactly one state per shard this host reads
                (naming the global indices expected and given).
        """
        given = {int(k): v for k, v in state.items()}
        if sorted(given) != self._global:
            count, index = self._shard_options.shard_count, self._shard_options.shard_index
            raise ValueError(
                f"shard {index} of {count} reads global shards {self._global}, got the states"
                f" of {sorted(given)}"
            )
        self._done = {k: s for k, s in given.items() if s["exhausted"]}
        _base.close_keeping_sources(self._iterator)
        self._start([k for k in self._global if k not in self._done])
        top = self._iterator.get_state()
        self._interleave_state(top).update(self._shards.join([given[k] for k in self._active]))
        self._iterator.set_state(top)

    def get_state(self) -> Any:
        """The pipeline's state, which restores this host of the same configuration (as
        upstream's). After a ``set_shard_states`` that left exhausted shards out of the
        interleave: ``{"spelt_exhausted_shards": {str(global index): state},
        "spelt_pipeline_state": the pipeline's state}`` (Spelt only)."""
        state = self._iterator.get_state()
        if not self._done:
            return state
        return {_DONE_KEY: {str(k): s for k, s in self._done.items()}, _PIPELINE_KEY: state}

    def set_state(self, state: Any) -> None:
        """Restores a ``get_state()`` of this host (same shard options)."""
        done = state.get(_DONE_KEY) if isinstance(state, dict) else None
        done = {} if done is None else {int(k): s for k, s in done.items()}
        if done != self._done:
            _base.close_keeping_sources(self._iterator)
            self._done = done
            self._start([k for k in self._global if k not in done])
        self._iterator.set_state(state[_PIPELINE_KEY] if done else state)

    def start_prefetch(self) -> None:
        self._iterator.start_prefetch()

    async def save(self, directory: Any) -> Awaitable[None]:
        """Orbax v1's ``save``: awaited, takes the shard states and the state at once and
        returns the coroutine writing ``shard_state_<k>.json`` for this host's shards and
        ``process_<i>-of-<n>.json``."""
        return _shard_checkpoint.background_save(
            directory, self.get_shard_states(), json.dumps(self.get_state(), indent=4)
        )

    async def load(self, directory: Any) -> Awaitable[None]:
        """Orbax v1's ``load``: awaited, returns the coroutine restoring from this process's
        file, or from the shard files where the checkpoint's process count differs."""
        return _shard_checkpoint.background_load(
            directory, self, lambda text: self.set_state(json.loads(text))
        )

    def close(self) -> None:
        self._iterator.close()
