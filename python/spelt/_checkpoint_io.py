"""The state files of Orbax checkpoints, and the iterators' asynchronous ``save``/``load``.

Layout (Grain 0.2.18, grain/_src/python/checkpoint/handler.py and base.py): the iterator state
of process ``i`` of ``n`` (``sharding.get_process_index_and_count()``, i.e. JAX's) is the text
file ``<directory>/process_<i>-of-<n>.json``: the state's JSON with ``indent=4``, for
DataLoader and Dataset iterators alike. A file written by Grain restores in Spelt and the
reverse. A checkpoint written by another number of processes restores only into an iterator
whose state is global (``Redistributable``: ElasticIterator), from files that all hold an
ElasticIterator position (a prefetch or ``device_put`` after an ElasticIterator), or from files
that all hold VirtualShardIterDataset states (each process takes its own virtual shards' states
from their union); any other restore raises a ValueError naming what was saved and what is
asked (docs/compatibility.md). An ElasticIterator over an interleave of shards restores from
per-shard files instead (``spelt._shard_checkpoint``).

``directory`` may be any path object with ``/`` and ``read_text``/``write_text``/``exists``
(``pathlib.Path``, ``etils.epath.Path`` as Orbax passes it) or a ``str``/``os.PathLike``.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from typing import Any, Awaitable, Callable, Protocol, Sequence, runtime_checkable

from spelt import sharding


def as_path(directory: Any) -> Any:
    """``directory`` as a path object (a ``str`` or ``os.PathLike`` becomes a pathlib.Path)."""
    if isinstance(directory, (str, bytes)) or not hasattr(directory, "__truediv__"):
        return pathlib.Path(os.fsdecode(directory))
    return directory


def state_file(directory: Any) -> Any:
    """The path of this process's state file in ``directory``."""
    index, count = sharding.get_process_index_and_count()
    return as_path(directory) / f"process_{index}-of-{count}.json"


def write_state(directory: Any, state: str) -> None:
    state_file(directory).write_text(state)


@runtime_checkable
class Redistributable(Protocol):
    """An iterator whose checkpoint restores on another number of processes: its state is
    global (the same on every process, e.g. ElasticIterator's position), not a shard's."""

    def merge_process_states(self, states: dict[str, str]) -> str:
        """The state text this process restores, given every file of the checkpoint
        (``{file name: text}``, all ``n`` of one process count ``n`` other than this one's).
        ValueError if they do not make one state (e.g. processes saved different steps)."""


_STATE_FILE = re.compile(r"process_(\d+)-of-(\d+)\.json")


def read_state(directory: Any, item: Any = None) -> str:
    """The text of this process's state file.

    Where the checkpoint was written by another number of processes (this process's file is
    missing and ``directory`` holds the ``n`` files ``process_<j>-of-<n>.json``), an ``item``
    that is ``Redistributable`` merges those files into its state, and files that all hold an
    ElasticIterator state (``{"global_next_index": g}`` alone: the state of an ElasticIterator
    and of a prefetch, ``device_put`` or ``map`` after one) restore as their common position
    (``merge_positions``), whatever the item. Otherwise ValueError that names this process's
    file, what the checkpoint holds (n files) and what to do."""
    path = state_file(directory)
    if path.exists():
        return path.read_text()
    index, count = sharding.get_process_index_and_count()
    by_count: dict[int, dict[int, Any]] = {}
    for candidate in path.parent.glob("process_*-of-*.json"):
        match = _STATE_FILE.fullmatch(candidate.name)
        if match:
            by_count.setdefault(int(match[2]), {})[int(match[1])] = candidate
    complete = {n: files for n, files in by_count.items() if sorted(files) == list(range(n))}
    missing = f"File {path} does not exist"
    if not by_count:
        raise ValueError(f"{missing}: {path.parent} holds no process_<i>-of-<n>.json file.")
    if len(complete) != 1 or count in by_count:
        held = "; ".join(
            f"{len(files)} of the {n} files of {n} processes ({_names(files.values())})"
            for n, files in sorted(by_count.items())
        )
        raise ValueError(
            f"{missing}: {path.parent} holds {held}, not one complete set of another process"
            " count. Restore from a checkpoint that every process finished writing."
        )
    ((saved_count, files),) = complete.items()
    texts = {f.name: f.read_text() for _, f in sorted(files.items())}
    if isinstance(item, Redistributable):
        return item.merge_process_states(texts)
    if all(_is_position(text) for text in texts.values()):
        # The pipeline's state is an ElasticIterator's global position (an ElasticIterator, or
        # transformations after one that keep its state: prefetch, device_put, map), so it
        # restores on any number of processes as the ElasticIterator does.
        return merge_positions(texts)
    if all(_is_virtual_shard_state(text) for text in texts.values()):
        # The states of every virtual shard, in the files of the processes that owned them (of
        # a VirtualShardIterDataset, or transformations after one that keep its state): each
        # process of the new count takes its own shards' states from their union.
        merged = merge_virtual_shard_states([json.loads(text) for text in texts.values()])
        return json.dumps(merged, indent=4)
    what = "this iterator" if item is None else f"a {type(item).__name__}"
    raise ValueError(
        f"{missing}: the checkpoint in {path.parent} was written by {saved_count}"
        f" processes ({_names(files.values())}) and this is process {index} of {count}."
        f" The state of {what} is the position of its own process's"
        " shard, so it cannot be split over another number of processes without losing or"
        f" repeating elements. Restore with {saved_count} processes, or checkpoint a"
        " pipeline whose state is global (spelt.experimental.ElasticIterator) or made of"
        " virtual shards (spelt.experimental.VirtualShardIterDataset; see"
        " docs/compatibility.md, Checkpoints across process counts)."
    )


POSITION_KEY = "global_next_index"


def position(state: Any) -> int:
    """The global position of an ElasticIterator state ``{"global_next_index": g}``;
    ValueError if ``state`` is not one."""
    value = state.get(POSITION_KEY) if isinstance(state, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"ElasticIterator state must be {{{POSITION_KEY!r}: non-negative int}}, got {state!r}"
        )
    return value


def _is_position(text: str) -> bool:
    """Whether ``text`` is the JSON of an ElasticIterator state and nothing else."""
    try:
        state = json.loads(text)
        position(state)
    except ValueError:  # json.JSONDecodeError too
        return False
    return len(state) == 1


def merge_positions(states: dict[str, str]) -> str:
    """The ElasticIterator state (JSON text) that every process of another process count
    restores from the files ``states`` (``{file name: JSON text}``) of a checkpoint: their
    common global position. ValueError naming each file's position if they differ (the
    processes saved at different steps), or naming a file that is not such a state."""
    positions = {}
    for name, text in states.items():
        try:
            positions[name] = position(json.loads(text))
        except (ValueError, TypeError) as e:
            raise ValueError(f"ElasticIterator checkpoint file {name}: {e}") from e
    if len(set(positions.values())) != 1:
        raise ValueError(
            "ElasticIterator checkpoint files hold different global positions"
            f" ({', '.join(f'{n}: {g}' for n, g in positions.items())}): the processes"
            " saved at different steps, so no one position restores them on another"
            " number of processes without losing or repeating elements"
        )
    return json.dumps({POSITION_KEY: next(iter(positions.values()))}, indent=4)


# The state of a VirtualShardIterDataset iterator (spelt/virtual_shards.py): the states of one
# process's virtual shards, {"num_virtual_shards": K, "shard_index": i, "shard_count": n,
# "next_shard": v, "shards": {str(v): {"exhausted": 0/1, "state": ...}}}.
VIRTUAL_SHARD_KEYS = _K, _INDEX, _COUNT, _NEXT, _SHARDS = (
    "num_virtual_shards",
    "shard_index",
    "shard_count",
    "next_shard",
    "shards",
)


def merge_virtual_shard_states(states: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The state that restores hosts of any count from the states of all hosts of a checkpoint.

    Args:
        states: ``get_state()`` of every host's VirtualShardIterDataset iterator (one per host
            of the checkpoint, in any order; their steps may differ).

    Returns:
        ``{"num_virtual_shards": K, "shard_index": None, "shard_count": N, "next_shard": -1,
        "shards": {str(v): {"exhausted": 0/1, "state": ...} for every v < K}}``: pass it to
        ``set_state`` of each new host's iterator, which takes its own shards' states.

    Raises:
        ValueError: a state is not a VirtualShardIterDataset state, the states have different
            numbers of virtual shards, a shard is in two states, or a shard is in none (a host's
            state is missing), naming the shards.
    """
    shards: dict[str, Any] = {}
    counts = set()
    for state in states:
        check_virtual_shard_state(state)
        counts.add((state[_K], state[_COUNT]))
        repeated = sorted(set(shards) & set(state[_SHARDS]), key=int)
        if repeated:
            raise ValueError(
                f"virtual shards {', '.join(repeated)} are in the states of two hosts: the"
                " states are not those of one checkpoint"
            )
        shards.update(state[_SHARDS])
    if len({k for k, _ in counts}) != 1:
        raise ValueError(
            f"the states have different numbers of virtual shards ({sorted(k for k, _ in counts)})"
        )
    if not counts:
        raise ValueError("no VirtualShardIterDataset state to merge")
    ((num_virtual_shards, count), *_) = counts
    missing = [str(v) for v in range(num_virtual_shards) if str(v) not in shards]
    if missing:
        raise ValueError(
            f"virtual shards {', '.join(missing)} of {num_virtual_shards} are in no state: pass"
            " the states of all the hosts that saved the checkpoint"
        )
    return {_K: num_virtual_shards, _INDEX: None, _COUNT: count, _NEXT: -1, _SHARDS: shards}


def check_virtual_shard_state(state: Any) -> None:
    """ValueError if ``state`` is not a VirtualShardIterDataset state (naming its keys)."""
    keys = set(VIRTUAL_SHARD_KEYS)
    if not isinstance(state, dict) or set(state) != keys or not isinstance(state[_SHARDS], dict):
        raise ValueError(
            f"a VirtualShardIterDataset state is a dict with keys {sorted(keys)}, got {state!r}"
        )


def _is_virtual_shard_state(text: str) -> bool:
    """Whether ``text`` is the JSON of a VirtualShardIterDataset state."""
    try:
        check_virtual_shard_state(json.loads(text))
    except ValueError:  # json.JSONDecodeError too
        return False
    return True


def _names(paths: Any) -> str:
    names = sorted((p.name for p in paths), key=lambda n: [int(x) for x in re.findall(r"\d+", n)])
    return ", ".join(names) if len(names) <= 4 else f"{names[0]}, ..., {names[-1]}"


async def background_save(directory: Any, state: str) -> None:
    """What an iterator's Orbax v1 ``save`` returns once awaited (Grain's background_save):
    the coroutine writing ``state`` to ``directory/process_<i>-of-<n>.json``, which Orbax runs
    in the background. ``directory`` may be Orbax's ``PathAwaitingCreation`` (awaited first), a
    path object or a str."""
    await_creation = getattr(directory, "await_creation", None)
    if await_creation is not None:
        directory = await await_creation()
    import asyncio  # pylint: disable=import-outside-toplevel  # ~50 ms: only Orbax v1 needs it

    await asyncio.to_thread(write_state, directory, state)


async def background_load(
    directory: Any, set_state_text: Callable[[str], None], item: Any = None
) -> None:
    """What an iterator's Orbax v1 ``load`` returns once awaited (Grain's background_load):
    the coroutine reading the state file (``read_state(directory, item)``) and calling
    ``set_state_text`` with its text."""
    import asyncio  # pylint: disable=import-outside-toplevel  # ~50 ms: only Orbax v1 needs it

    set_state_text(await asyncio.to_thread(read_state, directory, item))
