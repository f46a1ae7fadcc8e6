"""The demos' training checkpoints: one .npz with the step, the weights and the loader state.

``save_checkpoint`` writes atomically (temporary file, fsync, rename), so a process killed
with SIGKILL at any moment leaves either the previous checkpoint or the new one, whole.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

_RESERVED = ("step", "loader_state")


def save_checkpoint(path: Path, step: int, weights: dict, loader_state: bytes) -> None:
    """Writes step, the weights (dict name -> array) and the loader state bytes to path."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, step=step, loader_state=np.frombuffer(loader_state, np.uint8), **weights)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_checkpoint(path: Path) -> tuple[int, dict[str, np.ndarray], bytes]:
    """(step, weights, loader_state bytes) of a checkpoint written by save_checkpoint."""
    with np.load(path) as ckpt:
        weights = {k: ckpt[k] for k in ckpt.files if k not in _RESERVED}
        return int(ckpt["step"]), weights, ckpt["loader_state"].tobytes()
