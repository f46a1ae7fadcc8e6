"""The demos' training checkpoints (one .npz: step, weights, loader state) and run logs.

``save_checkpoint`` writes atomically (temporary file, fsync, rename), so a process killed
with SIGKILL at any moment leaves either the previous checkpoint or the new one, whole.
``train_resumably`` is the training loop of the jobs that examples/kill_resume.py runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


def train_resumably(
    run_dir: Path,
    iterator: Iterator[Any],
    weights: dict[str, np.ndarray],
    steps: int,
    train_step: Callable[[dict, Any], tuple[dict, float]],
    digest: Callable[[Any], str],
    on_step: Callable[[int, float, Any], None] = lambda step, loss, batch: None,
) -> None:
    """Trains to ``steps`` from ``weights`` (or from run_dir/checkpoint.npz when it exists:
    its weights, step and the iterator's state), checkpointing after every step; logs
    ``digest(batch)`` per step to run_dir/batches_from_step_<first step>.log (read_batch_log)
    and writes run_dir/final_weights.npz at the end. ``on_step(step, loss, batch)`` runs after
    each step's checkpoint (for progress reports)."""
    checkpoint = run_dir / "checkpoint.npz"
    step = 0
    if checkpoint.exists():
        step, weights, state = load_checkpoint(checkpoint)
        iterator.set_state(json.loads(state))
        print(f"  resumed from {checkpoint.name} at step {step}", flush=True)
    with open(run_dir / f"batches_from_step_{step}.log", "w", buffering=1) as log:
        while step < steps:
            batch = next(iterator)
            log.write(f"{step} {digest(batch)}\n")
            weights, loss = train_step(weights, batch)
            step += 1
            save_checkpoint(checkpoint, step, weights, json.dumps(iterator.get_state()).encode())
            on_step(step, loss, batch)
    np.savez(run_dir / "final_weights.npz", **weights)
