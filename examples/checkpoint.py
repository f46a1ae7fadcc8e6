"""The demos' training checkpoints (one .npz: step, weights, loader state) and run logs.

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


def read_batch_log(run_dir: Path, first_step: int) -> list[tuple[int, str]]:
    """(step, batch sha256) lines that the process which started at first_step logged."""
    lines = (run_dir / f"batches_from_step_{first_step}.log").read_text().splitlines()
    return [(int(step), digest) for step, digest in (line.split() for line in lines)]


def same_weights(run_a: Path, run_b: Path) -> bool:
    """Whether two runs' final_weights.npz hold the same arrays, bit for bit."""
    with np.load(run_a / "final_weights.npz") as a, np.load(run_b / "final_weights.npz") as b:
        return a.files == b.files and all(
            a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes() for k in a.files
        )
