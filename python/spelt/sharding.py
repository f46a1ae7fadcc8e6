"""Sharding options for splitting a data source across processes/hosts.

Behaviour follows Grain 0.2.18 (``grain.sharding``): the same classes, fields,
validation, equality and reprs, and the same ``even_split`` arithmetic. The
classes are frozen dataclasses (values, as in Grain); validation and
``even_split`` are the engine's (``spelt._core.ShardOptions``, spelt/sampler.h).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from spelt import _args
from spelt import _core

__all__ = [
    "ShardOptions",
    "NoSharding",
    "ShardByJaxProcess",
    "even_split",
    "get_process_index_and_count",
]

_log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ShardOptions:
    """Frozen options selecting one shard of a data source (as in Grain).

    Args:
        shard_index: int, index of this process's shard, in
            ``[0, shard_count)``.
        shard_count: int, total number of shards; must be positive.
        drop_remainder: bool, default False. If True every shard gets
            ``num_examples // shard_count`` examples and the rest are dropped;
            if False the ``num_examples % shard_count`` leftover examples go
            one each to the first shards.

    Raises:
        ValueError: if ``shard_count <= 0`` or ``shard_index`` is outside
            ``[0, shard_count - 1]`` (Grain's messages).
        TypeError: if an index or count is not an int that fits in 64 bits.
    """

    shard_index: int
    shard_count: int
    drop_remainder: bool = False

    def __post_init__(self):
        engine_options(self)  # validates


class NoSharding(ShardOptions):
    """``ShardOptions(0, 1)``: every process reads all the data (as in Grain).

    Takes no arguments. Its repr is
    ``NoSharding(shard_index=0, shard_count=1, drop_remainder=False)`` and,
    like Grain's, it does not compare equal to a plain ``ShardOptions(0, 1)``
    (dataclass equality requires the same class).
    """

    def __init__(self):
        super().__init__(shard_index=0, shard_count=1, drop_remainder=False)


class ShardByJaxProcess(ShardOptions):
    """One shard per JAX process (as in Grain).

    Args:
        drop_remainder: bool, default False; see ``ShardOptions``.

    Uses shard ``jax.process_index()`` of ``jax.process_count()`` when ``jax``
    can be imported, otherwise shard 0 of 1.
    """

    def __init__(self, drop_remainder: bool = False):
        index, count = get_process_index_and_count()
        super().__init__(shard_index=index, shard_count=count, drop_remainder=drop_remainder)


def get_process_index_and_count() -> tuple[int, int]:
    """Returns ``(jax.process_index(), jax.process_count())``, or ``(0, 1)``.

    Falls back to ``(0, 1)`` only when importing ``jax`` raises ImportError,
    as Grain does.
    """
    try:
        import jax  # pylint: disable=import-outside-toplevel
    except ImportError:
        return 0, 1
    return jax.process_index(), jax.process_count()


def engine_options(options: Any) -> _core.ShardOptions:
    """The engine's ShardOptions for any object with Grain's three fields.

    Internal (samplers and the DataLoader use it). Raises ValueError / TypeError
    as ``ShardOptions`` does.
    """
    fields = ("shard_index", "shard_count", "drop_remainder")
    if not all(hasattr(options, name) for name in fields):
        raise TypeError(
            "shard_options must be a ShardOptions (shard_index, shard_count, drop_remainder),"
            f" got {type(options).__name__} ({options!r})"
        )
    index, count = _args.int_fields(options, ("shard_index", "shard_count"))
    return _core.ShardOptions(index, count, bool(options.drop_remainder))


def even_split(num_examples: int, options: ShardOptions) -> tuple[int, int]:
    """Returns the half-open interval ``[start, end)`` of this shard's examples.

    Args:
        num_examples: int, the number of examples being split.
        options: ShardOptions, selects the shard and the remainder policy.

    Returns:
        ``(start, end)`` ints. Each shard gets ``num_examples // shard_count``
        consecutive examples; with ``drop_remainder=False`` the first
        ``num_examples % shard_count`` shards get one extra example each
        (shifting the later shards), with ``drop_remainder=True`` those
        trailing examples belong to no shard and a warning is logged.
        Identical to Grain's ``even_split``.
    """
    num_examples = _args.int_arg(num_examples, "even_split: num_examples")
    start, end, dropped = engine_options(options).even_split(num_examples)
    if dropped:
        _log.warning(
            "Dropping %d examples of %d examples (shard %d).",
            dropped,
            num_examples,
            options.shard_count,
        )
    return start, end
