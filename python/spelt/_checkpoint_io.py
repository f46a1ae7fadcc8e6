"""The state files of Orbax checkpoints, and the iterators' asynchronous ``save``/``load``.

Layout (Grain 0.2.18, grain/_src/python/checkpoint/handler.py and base.py): the iterator state
of process ``i`` of ``n`` (``sharding.get_process_index_and_count()``, i.e. JAX's) is the text
file ``<directory>/process_<i>-of-<n>.json``: the state's JSON with ``indent=4``, for
DataLoader and Dataset iterators alike. A file written by Grain restores in Spelt and the
reverse.

``directory`` may be any path object with ``/`` and ``read_text``/``write_text``/``exists``
(``pathlib.Path``, ``etils.epath.Path`` as Orbax passes it) or a ``str``/``os.PathLike``.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
from typing import Any, Awaitable, Callable

from spelt import sharding


def state_file(directory: Any) -> Any:
    """The path of this process's state file in ``directory``."""
    if isinstance(directory, (str, bytes)) or not hasattr(directory, "__truediv__"):
        directory = pathlib.Path(os.fsdecode(directory))
    index, count = sharding.get_process_index_and_count()
    return directory / f"process_{index}-of-{count}.json"


def write_state(directory: Any, state: str) -> None:
    state_file(directory).write_text(state)


def read_state(directory: Any) -> str:
    """The text of this process's state file; ValueError naming the file if it is missing."""
    path = state_file(directory)
    if not path.exists():
        raise ValueError(f"File {path} does not exist.")
    return path.read_text()


async def _background_save(directory: Any, state: str) -> None:
    # Orbax's PathAwaitingCreation: the directory may not exist before await_creation().
    await_creation = getattr(directory, "await_creation", None)
    if await_creation is not None:
        directory = await await_creation()
    await asyncio.to_thread(write_state, directory, state)


async def _background_load(directory: Any, set_state_text: Callable[[str], None]) -> None:
    set_state_text(await asyncio.to_thread(read_state, directory))


async def start_save(state: str, directory: Any) -> Awaitable[None]:
    """What an iterator's ``save(directory)`` returns (called, not awaited): a coroutine that,
    awaited, gives the coroutine writing ``state`` (Orbax runs that one in the background).
    The caller takes the state text before calling this, so ``next()`` calls after ``save()``
    do not change what is written."""
    return _background_save(directory, state)


async def start_load(directory: Any, set_state_text: Callable[[str], None]) -> Awaitable[None]:
    """What an iterator's ``load(directory)`` returns once awaited: the coroutine reading the
    state file and calling ``set_state_text`` with its text."""
    return _background_load(directory, set_state_text)
