"""The per-shard checkpoint files of an ElasticIterator over an interleave of shards.

Layout (upstream Grain after 0.2.18, grain/_src/python/checkpoint/elastic_checkpoint.py and
handler.py): besides its ``process_<i>-of-<n>.json`` (``spelt._checkpoint_io``), each process
writes one file per global shard that it reads, ``<directory>/shard_state_<k>.json``: that
shard's state (``{"exhausted": 0/1, "state": ...}``) as JSON with ``indent=4``. Shard k (the
k-th dataset of the interleave) is read by process ``k % n``, so the n processes write every
shard's file once. A restore on the same process count reads the process file; on another
count m, process i reads ``shard_state_<i>.json``, ``shard_state_<i + m>.json``, ... up to the
first missing one and restores those shards' states. An upstream checkpoint of this layout
restores in Spelt and the reverse.

``item`` is an ElasticIterator over an interleave (or its iterator): it has
``shard_options``, ``get_shard_states()`` (``{global shard index: state}``) and
``set_shard_states``. ``directory`` is a path object or a str, as for ``_checkpoint_io``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from spelt import _checkpoint_io
from spelt import sharding


def shard_file(directory: Any, index: int) -> Any:
    """The path of global shard ``index``'s state file in ``directory``."""
    return _checkpoint_io.as_path(directory) / f"shard_state_{index}.json"


def save_shard_states(directory: Any, shard_states: dict[int, Any]) -> None:
    """Writes ``shard_states`` (``{global shard index: state}``) as ``shard_state_<k>.json``."""
    for index, state in shard_states.items():
        shard_file(directory, index).write_text(json.dumps(state, indent=4))


_PROCESS_FILE = re.compile(r"process_\d+-of-(\d+)\.json")


def saved_process_count(directory: Any) -> int:
    """The largest n of the ``process_<i>-of-<n>.json`` files in ``directory`` (0 if none)."""
    counts = [
        int(match[1])
        for path in _checkpoint_io.as_path(directory).glob("process_*-of-*.json")
        if (match := _PROCESS_FILE.fullmatch(path.name))
    ]
    return max(counts, default=0)


def restores_from_shards(directory: Any) -> bool:
    """Whether the checkpoint in ``directory`` was written by another number of processes
    than this run's (``sharding.get_process_index_and_count()``), so that an ElasticIterator
    over an interleave restores from the shard files rather than its process file."""
    return saved_process_count(directory) != sharding.get_process_index_and_count()[1]


def restore_shard_states(directory: Any, item: Any) -> None:
    """Sets ``item``'s shard states from the files of the shards its ``shard_options`` select
    (``shard_index``, ``shard_index + shard_count``, ... up to the first missing file).

    Raises:
        ValueError: ``shard_state_<shard_index>.json`` is missing, or the files found are not
            as many as the shards that ``item`` reads (``set_shard_states``'s error).
    """
    options = item.shard_options
    states = {}
    index = options.shard_index
    while (path := shard_file(directory, index)).exists():
        states[index] = json.loads(path.read_text())
        index += options.shard_count
    if not states:
        raise ValueError(
            f"File {shard_file(directory, options.shard_index)} does not exist: the checkpoint"
            f" in {directory} holds no state of shard {options.shard_index}, which this process"
            f" ({options.shard_index} of {options.shard_count}) reads."
        )
    item.set_shard_states(states)


async def background_save(directory: Any, shard_states: dict[int, Any], state: str) -> None:
    """The coroutine of an iterator's Orbax v1 ``save``: writes the shard files, then the
    process file (``_checkpoint_io.background_save``)."""
    await_creation = getattr(directory, "await_creation", None)
    if await_creation is not None:
        directory = await await_creation()
    import asyncio  # pylint: disable=import-outside-toplevel  # ~50 ms: only Orbax v1 needs it

    await asyncio.to_thread(save_shard_states, directory, shard_states)
    await _checkpoint_io.background_save(directory, state)


async def background_load(directory: Any, item: Any, set_state_text: Callable[[str], None]) -> None:
    """The coroutine of an iterator's Orbax v1 ``load``: from the shard files where the
    process count changed (``restores_from_shards``), else from the process file."""
    import asyncio  # pylint: disable=import-outside-toplevel  # ~50 ms: only Orbax v1 needs it

    if await asyncio.to_thread(restores_from_shards, directory):
        await asyncio.to_thread(restore_shard_states, directory, item)
    else:
        await _checkpoint_io.background_load(directory, set_state_text)
