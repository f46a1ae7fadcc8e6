"""Grain's ``grain.config``: ``config.update(name, value)`` and ``config.get_or_default(name)``.

The flag names, types and defaults are Grain 0.2.18's (grain/_src/core/config.py, where each is
the absl flag ``--grain_<name>``). Differences (docs/compatibility.md):

* ``update()`` takes effect at once, in any program. Grain stores the values in absl flags,
  and reading one before absl parsed the command line raises ``UnparsedFlagAccessError``
  (``get_or_default`` then returns the default, ignoring ``update``). Spelt keeps its own
  values and reads no command-line flags.
* ``update()`` checks the value's type (bool, int, str or None, or one of the choices) and
  raises ValueError naming the flag; absl stores whatever it is given.

Spelt adds flags of its own (docs/remote.md), for reads of remote files (object stores):
``remote_max_in_flight`` (int >= 1, default 256), the most range requests of one process that
wait on a store at once; ``remote_retry_seconds`` (int >= 0, default 60), how long one request
is retried after throttling, server errors or dropped connections; and
``remote_read_ahead_mib`` (int >= 0, default 32), how many MiB a reader that goes front to back
(TFRecord, an index scan) keeps being read ahead of what it consumes, in windows of 8 MiB (at
least one), for files opened after the change. All are per process: set them in each worker
(``worker_init_fn``) where workers are spawned.

No Grain flag changes what Spelt does today: the ``tf_*`` flags are for Grain's TensorFlow loaders,
which Spelt does not have; ``py_debug_mode``, ``py_dataset_visualization_output_dir``,
``py_relay_sigterm_to_main`` and ``py_traceback_filtering`` are accepted and kept so that
Grain code runs, and read back as set.

Thread-safety: reads and updates of single flags are atomic (one dict operation each).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["Config", "config"]


@dataclasses.dataclass(frozen=True)
class _Flag:
    kind: type  # bool, int or str
    default: Any
    choices: tuple[str, ...] = ()
    minimum: int | None = None

    def check(self, name: str, value: Any) -> None:
        if self.choices:
            if value not in self.choices:
                raise ValueError(f"config {name!r} must be one of {self.choices}, got {value!r}")
        elif self.kind is str:
            if value is not None and not isinstance(value, str):
                raise ValueError(f"config {name!r} must be a str or None, got {value!r}")
        elif self.kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"config {name!r} must be an int, got {value!r}")
            if self.minimum is not None and value < self.minimum:
                raise ValueError(f"config {name!r} must be at least {self.minimum}, got {value}")
        elif not isinstance(value, bool):
            raise ValueError(f"config {name!r} must be a bool, got {value!r}")


# Grain 0.2.18's flags (without the "grain_" prefix), in its order.
_FLAGS = {
    "tf_interleaved_shuffle": _Flag(bool, False),
    "tf_interleaved_shuffle_block_size": _Flag(int, 10),
    "tf_interleaved_shuffle_parallel_blocks": _Flag(int, 10),
    "tf_lookup_batch_size": _Flag(int, 100),
    "tf_lookup_num_parallel_calls": _Flag(int, -1),
    "tf_lookup_fast_warmup": _Flag(bool, False),
    "tf_optimized_sequential_read": _Flag(bool, False),
    "tf_prefetch_buffer_size": _Flag(int, -1),
    "py_debug_mode": _Flag(bool, False),
    "py_dataset_visualization_output_dir": _Flag(str, None),
    "py_relay_sigterm_to_main": _Flag(bool, False),
    "py_traceback_filtering": _Flag(
        str, "auto", ("auto", "off", "tracebackhide", "quiet_remove_frames", "remove_frames")
    ),
    # Spelt's own (spelt._remote_reads).
    "remote_max_in_flight": _Flag(int, 256, minimum=1),
    "remote_retry_seconds": _Flag(int, 60, minimum=0),
    "remote_read_ahead_mib": _Flag(int, 32, minimum=0),
}


# Called with a flag's name after update() set it (spelt._native_files pushes the remote_*
# flags to the native files).
_listeners: list[Callable[[str], None]] = []


def on_update(listener: Callable[[str], None]) -> None:
    """Calls ``listener(name)`` after every ``config.update(name, ...)``."""
    _listeners.append(listener)


class Config:
    """Spelt's configuration (Grain's ``grain.config``); use the module-level ``config``.

    Read a flag as an attribute (``config.py_debug_mode``) or with ``get_or_default(name)``;
    set it with ``update(name, value)``. An unknown name raises ValueError (as in Grain), and
    so does assigning an attribute.
    """

    def __init__(self):
        object.__setattr__(self, "_values", {name: f.default for name, f in _FLAGS.items()})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/pickle probing special methods
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise ValueError(f"Unrecognized config option: {name}") from None

    def get_or_default(self, name: str) -> Any:
        """The flag's value: its default until ``update`` sets it. ValueError if unknown."""
        return self.__getattr__(name)

    def __setattr__(self, name: str, value: Any):
        raise ValueError("Please use update().")

    def update(self, name: str, value: Any) -> None:
        """Sets flag ``name`` (Grain's name without ``grain_``) to ``value``; effective at once.

        Raises ValueError if the name is unknown or the value has the wrong type."""
        flag = _FLAGS.get(name)
        if flag is None:
            raise ValueError(f"Unrecognized config option: {name}")
        flag.check(name, value)
        self._values[name] = value
        for listener in _listeners:
            listener(name)


config = Config()
