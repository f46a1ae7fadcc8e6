"""Grain's ``grain.checkpoint``: saving and restoring iterator state with Orbax.

``CheckpointHandler`` is Grain 0.2.18's Orbax handler (grain/_src/python/checkpoint/handler.py)
for DataLoader and Dataset iterators; ``CheckpointSave`` and ``CheckpointRestore`` are its
Orbax ``CheckpointArgs``, registered with it. As in Grain they exist only where the
``orbax-checkpoint`` package is installed (``pip install spelt-ml[orbax]``); Spelt imports Orbax
when one of them is first used, not at ``import spelt``.

Usage (Orbax's CheckpointManager)::

    mngr.save(step, args=ocp.args.Composite(
        params=ocp.args.StandardSave(params), ds=grain.checkpoint.CheckpointSave(it)))
    mngr.restore(step, args=ocp.args.Composite(
        params=ocp.args.StandardRestore(params), ds=grain.checkpoint.CheckpointRestore(it)))

Each process writes and reads its own file, ``process_<i>-of-<n>.json`` with ``i, n`` from
``spelt.sharding.get_process_index_and_count()`` (see ``spelt._checkpoint_io``); the files of
Grain and Spelt are the same, so either restores the other's. An ElasticIterator's checkpoint
also restores on another number of processes (its state is the global position), as does
one of a prefetch or ``device_put`` after it; any other iterator's raises ValueError there
(docs/compatibility.md, Checkpoints across process counts). An ElasticIterator over an
interleave of shards also writes upstream Grain's ``shard_state_<k>.json`` per shard and
restores from them on another process count (``spelt._shard_checkpoint``). The iterators' own
``save``/``load`` (Orbax's newer ``StatefulCheckpointable`` protocol) write the same files.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

from spelt import _checkpoint_io
from spelt import _shard_checkpoint
from spelt import dataset
from spelt import elastic
from spelt import elastic_interleave

__all__ = ["CheckpointHandler"]


class CheckpointHandler:
    """Orbax ``CheckpointHandler`` for Spelt's ``DataLoaderIterator`` and ``DatasetIterator``.

    ``save`` runs in the thread Orbax calls it from and takes the iterator's state at once
    (Orbax's CheckpointManager waits for it even when checkpointing asynchronously), so
    ``next()`` calls after ``CheckpointManager.save`` returns do not change what is saved.
    Holds no state; a single instance may be used from several threads.
    """

    def save(self, directory: Any, item: Any = None, args: Any = None) -> None:
        """Writes ``item`` (or ``args.item``)'s state to ``directory/process_<i>-of-<n>.json``.

        ``item`` is for Orbax's older API (Grain's). A ``DatasetIterator``'s state dict is
        written as JSON (indent 4); a ``DataLoaderIterator``'s state is already JSON bytes. An
        ElasticIterator over an interleave of shards (or its iterator) also writes
        ``shard_state_<k>.json`` for each global shard k it reads (upstream's layout)."""
        item = _item(item, args)
        if _has_shard_states(item):
            _shard_checkpoint.save_shard_states(directory, item.get_shard_states())
        if isinstance(item, _JSON_STATE):
            state = json.dumps(item.get_state(), indent=4)
        else:
            state = item.get_state().decode()
        _checkpoint_io.write_state(directory, state)

    def restore(self, directory: Any, item: Any = None, args: Any = None) -> Any:
        """Sets ``item`` (or ``args.item``)'s state from this process's file in ``directory``,
        starts its prefetch and returns it.

        A checkpoint written by another number of processes restores into an ElasticIterator
        (or its iterator), whose state is the global position, and into any iterator from
        files that all hold such a position (a prefetch or ``device_put`` after an
        ElasticIterator): every file must hold the same one. An ElasticIterator over an
        interleave of shards restores from the ``shard_state_<k>.json`` files of its shards
        instead (returned without starting its prefetch, as upstream's). ValueError if this
        process's file
        is missing and the item's state cannot be redistributed (naming the files saved and
        this process's index and count), or if the state does not fit the iterator's
        pipeline."""
        item = _item(item, args)
        if _has_shard_states(item) and _shard_checkpoint.restores_from_shards(directory):
            _shard_checkpoint.restore_shard_states(directory, item)
            return item
        state = _checkpoint_io.read_state(directory, item)
        if isinstance(item, _JSON_STATE):
            item.set_state(json.loads(state))
        else:
            item.set_state(state.encode())
        item.start_prefetch()
        return item

    # Required by Orbax's interface; iterator checkpoints have no structure or metadata.
    def structure(self, directory: Any) -> Any:
        del directory
        return None

    def metadata(self, directory: Any) -> Any:
        del directory
        return None

    def finalize(self, directory: Any) -> None:
        pass

    def close(self) -> None:
        pass

    @classmethod
    def typestr(cls) -> str:
        return f"{cls.__module__}.{cls.__qualname__}"


# Items whose get_state() is a dict written as JSON; DataLoader iterators give JSON bytes. An
# ElasticIterator (an IterDataset with the iterator methods, as Grain's) is checkpointed itself.
_JSON_STATE = (dataset.DatasetIterator, elastic.ElasticIterator)


def _has_shard_states(item: Any) -> bool:
    """Whether ``item`` is an ElasticIterator over an interleave of shards (or its iterator),
    checkpointed with one file per shard as well (``spelt._shard_checkpoint``)."""
    base = item.base_iterator if isinstance(item, elastic.ElasticIterator) else item
    return isinstance(base, elastic_interleave.ElasticIterDatasetIterator)


def _item(item: Any, args: Any) -> Any:
    item = item if item is not None else getattr(args, "item", None)
    if item is None:
        raise ValueError("CheckpointHandler needs the iterator, as `item` or `args.item`")
    return item


@functools.cache
def _orbax_args() -> dict[str, type]:
    """Defines CheckpointSave and CheckpointRestore on Orbax's CheckpointArgs and registers them
    with CheckpointHandler (once). ImportError if orbax-checkpoint is not installed."""
    import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel

    @ocp.args.register_with_handler(CheckpointHandler, for_save=True)
    @dataclasses.dataclass
    class CheckpointSave(ocp.args.CheckpointArgs):
        """Orbax args saving ``item``, a DataLoader or Dataset iterator."""

        item: Any

    @ocp.args.register_with_handler(CheckpointHandler, for_restore=True)
    @dataclasses.dataclass
    class CheckpointRestore(ocp.args.CheckpointArgs):
        """Orbax args restoring into ``item``, an iterator of the same pipeline."""

        item: Any

    for cls in (CheckpointSave, CheckpointRestore):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
    return {"CheckpointSave": CheckpointSave, "CheckpointRestore": CheckpointRestore}


def orbax_arg(name: str) -> type:
    """``CheckpointSave`` or ``CheckpointRestore``; AttributeError, as for any missing name,
    where orbax-checkpoint is not installed (Grain defines them only then)."""
    try:
        return _orbax_args()[name]
    except ImportError as e:
        raise AttributeError(
            f"spelt.checkpoint.{name} needs the orbax-checkpoint package"
            f" (pip install spelt-ml[orbax]): {e}"
        ) from e


def __getattr__(name: str) -> Any:
    if name in ("CheckpointSave", "CheckpointRestore"):
        return orbax_arg(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
