"""Samplers: map a global step index to the record to read next.

Behaviour follows Grain 0.2.18 (``grain.samplers``): same constructor
arguments, validation, error types and messages, ``__len__``, ``__repr__`` and
``__getitem__`` results (record keys and per-record RNGs), bit for bit.
"""

from __future__ import annotations

import operator
import sys
from typing import Optional, Protocol

import numpy as np

from spelt import record
from spelt import sharding

__all__ = ["Sampler", "SequentialSampler", "IndexSampler"]

# Feistel rounds Grain's ShuffleMapDataset (and so IndexSampler) uses.
_SHUFFLE_ROUNDS = 4

_index_shuffle_fn = None


def _index_shuffle(index: int, max_index: int, seed: int) -> int:
    """Calls ``spelt._core.index_shuffle``, importing the extension lazily."""
    global _index_shuffle_fn
    if _index_shuffle_fn is None:
        from spelt import _core  # pylint: disable=import-outside-toplevel

        _index_shuffle_fn = _core.index_shuffle
    return _index_shuffle_fn(index, max_index, seed, _SHUFFLE_ROUNDS)


def _check_num_records(num_records: int) -> None:
    if num_records <= 0:
        raise ValueError(
            "Invalid number of records in Sampler. "
            f"Got {num_records} records, but number of records "
            "must be greater than 0."
        )


def _out_of_bounds(index: int, max_index: Optional[int]) -> IndexError:
    return IndexError(
        f"RecordMetadata object index is out of bounds; Got index {index},"
        f" allowed indices should be in [0, {max_index}]"
    )


def _record_rng(seed: Optional[int], index: int) -> Optional[np.random.Generator]:
    if seed is None:
        return None
    return np.random.Generator(np.random.Philox(key=seed + index))


class Sampler(Protocol):
    """Structural interface of a sampler (as in Grain).

    Any object with ``__getitem__(index: int) -> RecordMetadata`` is a
    sampler; the DataLoader also uses ``len()`` when it is defined.
    """

    def __getitem__(self, index: int) -> record.RecordMetadata:
        """Returns the RecordMetadata for global index ``index``."""


class SequentialSampler:
    """Reads records ``0, 1, ..., n - 1`` once, in order (as in Grain).

    Args:
        num_records: int, number of records in the data source; must be > 0.
        shard_options: ShardOptions, default ``NoSharding()``. Only
            ``drop_remainder`` matters here: with it, ``len()`` is rounded down
            to a multiple of ``shard_count`` (the DataLoader does the
            per-shard striding).
        seed: Optional[int], default None. When given, each record gets
            ``rng = np.random.Generator(np.random.Philox(key=seed + index))``.

    Raises:
        ValueError: if ``num_records <= 0``.

    ``sampler[i]`` is ``RecordMetadata(index=i, record_key=i, rng=...)`` and
    raises IndexError unless ``0 <= i < len(sampler)``.
    """

    def __init__(
        self,
        num_records: int,
        shard_options: sharding.ShardOptions = sharding.NoSharding(),
        seed: Optional[int] = None,
    ):
        _check_num_records(num_records)
        self._num_records = num_records
        self._shard_options = shard_options
        if shard_options.drop_remainder:
            count = shard_options.shard_count
            self._max_index = (num_records // count) * count
        else:
            self._max_index = num_records
        self._seed = seed

    def __len__(self) -> int:
        return self._max_index

    def __repr__(self) -> str:
        return (
            f"SequentialSampler(num_records={self._num_records}, "
            f"shard_options={self._shard_options!r})"
        )

    def __getitem__(self, index: int) -> record.RecordMetadata:
        if index < 0 or index >= self._max_index:
            raise _out_of_bounds(index, self._max_index)
        return record.RecordMetadata(
            index=index, record_key=index, rng=_record_rng(self._seed, index)
        )


class IndexSampler:
    """Sharded, optionally shuffled, optionally repeated sampler (as in Grain).

    Args:
        num_records: int, number of records in the data source; must be > 0.
        shard_options: ShardOptions, default ``NoSharding()``. Unless it is a
            ``NoSharding``, this shard reads only its contiguous block
            ``even_split(num_records, shard_options)`` of record keys.
        shuffle: bool, default False. Shuffle the (shard's) keys with Grain's
            ``index_shuffle`` (4 rounds), a fresh permutation per epoch with
            seed ``(seed + epoch) % 2**32``.
        num_epochs: Optional[int], default None (repeat forever); else > 0.
        seed: Optional[int], default None; required for shuffling. Also seeds
            the per-record ``rng`` (Philox with key ``seed + index``).

    Raises:
        ValueError: ``num_records <= 0``; ``num_epochs <= 0``; ``shuffle``
            without a seed; a seed that is negative or wider than 32 bits.
        TypeError: ``shuffle`` with a seed that is not a Python ``int``.

    ``len()`` is ``sys.maxsize`` when ``num_epochs`` is None, else
    ``num_epochs * num_records`` (with ``drop_remainder`` sharding, capped at
    ``block_len * shard_count * num_epochs``). ``sampler[g]`` is
    ``RecordMetadata(index=g, record_key=keys[g // shard_count], rng=...)``
    where ``keys`` is this shard's (shuffled) key sequence repeated over
    epochs; out-of-range ``g`` raises IndexError.
    """

    def __init__(
        self,
        num_records: int,
        shard_options: sharding.ShardOptions = sharding.NoSharding(),
        shuffle: bool = False,
        num_epochs: Optional[int] = None,
        seed: Optional[int] = None,
    ):
        _check_num_records(num_records)
        if num_epochs is not None and num_epochs <= 0:
            raise ValueError(
                "Invalid number of epochs in Index Sampler."
                f"Got {num_epochs} epochs, but number of epochs "
                "must be greater than 0."
            )
        if shuffle and seed is None:
            raise ValueError("Shuffling requires specifying a seed.")
        if shuffle and not isinstance(seed, int):
            raise TypeError(
                f"Expected seed of int type. Got seed with type {type(seed)}"
            )
        if seed is not None and (seed < 0 or seed.bit_length() > 32):
            raise ValueError("Seed should be positive 32-bit integer.")

        self._num_records = num_records
        self._shard_options = shard_options
        self._shuffle = shuffle
        self._num_epochs = num_epochs
        self._seed = seed
        self._max_index = (
            None if num_epochs is None else num_epochs * num_records
        )

        # This shard's block of keys [start, start + block_len). NoSharding
        # (the only case Grain leaves unsharded) gives the whole range.
        if isinstance(shard_options, sharding.NoSharding):
            start, end = 0, num_records
        else:
            start, end = sharding.even_split(num_records, shard_options)
            if self._max_index is not None and shard_options.drop_remainder:
                self._max_index = min(
                    self._max_index,
                    (end - start) * shard_options.shard_count * num_epochs,
                )
        self._block_start = start
        self._block_len = end - start

    def __len__(self) -> int:
        return sys.maxsize if self._max_index is None else self._max_index

    def __repr__(self) -> str:
        return (
            f"IndexSampler(num_records={self._num_records}, "
            f"shard_options={self._shard_options!r}, "
            f"shuffle={self._shuffle}, "
            f"num_epochs={self._num_epochs}, "
            f"seed={self._seed})"
        )

    def _record_key(self, local_index: int) -> int:
        """Key at position ``local_index`` of this shard's key stream."""
        # Raises ZeroDivisionError for an empty block, as Grain does.
        epoch, position = divmod(local_index, self._block_len)
        if self._shuffle:
            position = _index_shuffle(
                position,
                self._block_len - 1,
                (self._seed + epoch) % 2**32,
            )
        return self._block_start + position

    def __getitem__(self, index: int) -> record.RecordMetadata:
        if index < 0 or (self._max_index is not None and index >= self._max_index):
            raise _out_of_bounds(index, self._max_index)
        local_index = operator.index(index) // self._shard_options.shard_count
        return record.RecordMetadata(
            index=index,
            record_key=self._record_key(local_index),
            rng=_record_rng(self._seed, index),
        )
