"""Samplers: map a global step index to the record to read next.

Behaviour follows Grain 0.2.18 (``grain.samplers``): same constructor
arguments, validation, error types and messages, ``__len__``, ``__repr__`` and
``__getitem__`` results (record keys and per-record RNGs), bit for bit.
The classes are faces over the engine's samplers (``spelt._core.IndexSampler``
and ``SequentialSampler``, spelt/sampler.h), which validate the arguments and
compute record keys (sharding, epochs, shuffling) and generator keys; a
DataLoader reads them in C++ through ``_spelt_sampler()``.
"""

from __future__ import annotations

import sys
from typing import Optional, Protocol

import numpy as np

from spelt import _args
from spelt import _core
from spelt import record
from spelt import sharding

__all__ = ["Sampler", "SequentialSampler", "IndexSampler"]


class Sampler(Protocol):
    """Structural interface of a sampler (as in Grain).

    Any object with ``__getitem__(index: int) -> RecordMetadata`` is a
    sampler. ``__len__`` is optional: without it the DataLoader takes the
    first index whose ``__getitem__`` raises IndexError (found by binary
    search, as Grain does) as the length.
    """

    def __getitem__(self, index: int) -> record.RecordMetadata:
        """Returns the RecordMetadata for global index ``index``."""


class _EngineSampler:
    """What the faces share: ``self._sampler`` is the engine's sampler, built by
    ``_make_engine_sampler()`` from the constructor arguments (kept as Grain's
    private attributes, which also make the pickled state)."""

    _sampler: _core.Sampler

    def _make_engine_sampler(self) -> _core.Sampler:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._sampler)

    @property
    def _max_index(self) -> Optional[int]:
        """Grain's attribute: the number of indices, None if infinite."""
        length = len(self._sampler)
        return None if length == sys.maxsize else length

    def __getitem__(self, index: int) -> record.RecordMetadata:
        """``RecordMetadata(index, record_key, rng)`` of global index ``index``.

        ``rng`` is a new ``np.random.Generator(np.random.Philox(key=seed +
        index))`` when the sampler has a seed (None otherwise), as in Grain.

        Raises:
            IndexError: ``index`` outside ``[0, len(self))`` (Grain's message).
            ZeroDivisionError: this shard owns no records (as in Grain).
            TypeError: ``index`` is not an int that fits in 64 bits.
        """
        record_key, rng_key = self._sampler.record(
            _args.int_arg(index, "sampler index", bool_ok=True)
        )
        # A fresh generator: callers may keep several records' metadata at once.
        rng = None if rng_key is None else np.random.Generator(np.random.Philox(key=rng_key))
        return record.RecordMetadata(index=index, record_key=record_key, rng=rng)

    def _spelt_sampler(self) -> Optional[_core.Sampler]:
        """The engine sampler a DataLoader reads without calling Python, or None
        if a subclass overrides ``__getitem__`` or ``__len__`` (the DataLoader
        then calls those)."""
        cls = type(self)
        if (
            cls.__getitem__ is not _EngineSampler.__getitem__
            or cls.__len__ is not _EngineSampler.__len__
        ):
            return None
        return self._sampler

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_sampler"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._sampler = self._make_engine_sampler()


class SequentialSampler(_EngineSampler):
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
        TypeError: if ``seed`` is not an int (Grain defers this to the first
            record); OverflowError if it does not fit in 64 bits.

    ``sampler[i]`` is ``RecordMetadata(index=i, record_key=i, rng=...)`` and
    raises IndexError unless ``0 <= i < len(sampler)``.
    """

    def __init__(
        self,
        num_records: int,
        shard_options: sharding.ShardOptions = sharding.NoSharding(),
        seed: Optional[int] = None,
    ):
        _args.int_arg(num_records, "SequentialSampler: num_records")
        self._num_records = num_records
        self._shard_options = shard_options
        self._seed = seed
        self._sampler = self._make_engine_sampler()

    def _make_engine_sampler(self) -> _core.Sampler:
        return _core.SequentialSampler(
            self._num_records, sharding.engine_options(self._shard_options), self._seed
        )

    def __repr__(self) -> str:
        return (
            f"SequentialSampler(num_records={self._num_records}, "
            f"shard_options={self._shard_options!r})"
        )


class IndexSampler(_EngineSampler):
    """Sharded, optionally shuffled, optionally repeated sampler (as in Grain).

    Args:
        num_records: int, number of records in the data source; must be > 0.
        shard_options: ShardOptions, default ``NoSharding()``. This shard reads
            only its contiguous block ``even_split(num_records, shard_options)``
            of record keys.
        shuffle: bool, default False. Shuffle the (shard's) keys with Grain's
            ``index_shuffle`` (4 rounds), a fresh permutation per epoch with
            seed ``(seed + epoch) % 2**32``.
        num_epochs: Optional[int], default None (repeat forever); else > 0.
        seed: Optional[int], default None; required for shuffling. Also seeds
            the per-record ``rng`` (Philox with key ``seed + index``).

    Raises (in Grain's order, with its messages):
        ValueError: ``num_records <= 0``; ``num_epochs <= 0``; ``shuffle``
            without a seed; a seed that is negative or wider than 32 bits.
        TypeError: a seed that is not a Python ``int`` (Grain raises this only
            when shuffling, AttributeError otherwise).
        OverflowError: ``num_epochs * num_records`` above ``sys.maxsize``.

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
        _args.int_arg(num_records, "IndexSampler: num_records")
        _args.int_arg(num_epochs, "IndexSampler: num_epochs", optional=True)
        self._num_records = num_records
        self._shard_options = shard_options
        self._shuffle = shuffle
        self._num_epochs = num_epochs
        self._seed = seed
        self._sampler = self._make_engine_sampler()

    def _make_engine_sampler(self) -> _core.Sampler:
        return _core.IndexSampler(
            self._num_records,
            sharding.engine_options(self._shard_options),
            bool(self._shuffle),
            self._num_epochs,
            self._seed,
        )

    def __repr__(self) -> str:
        return (
            f"IndexSampler(num_records={self._num_records}, "
            f"shard_options={self._shard_options!r}, "
            f"shuffle={self._shuffle}, "
            f"num_epochs={self._num_epochs}, "
            f"seed={self._seed})"
        )
