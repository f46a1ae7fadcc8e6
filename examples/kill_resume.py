"""The demos' kill-and-resume steps: run a training job in its own process, SIGKILL it once its
checkpoint (checkpoint.py) reaches a step, and compare the resumed run with an uninterrupted one.

A job is a command that trains into a run directory: it resumes from RUN_DIR/checkpoint.npz
when that exists, checkpoints after every step, logs a sha256 per batch with
``checkpoint.read_batch_log``'s format and writes RUN_DIR/final_weights.npz at the end
(examples/lm_train.py, examples/vision_train.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from checkpoint import load_checkpoint, read_batch_log, same_weights


def start_job(command: list[str], run_dir: Path) -> subprocess.Popen:
    """Starts ``command + [run_dir]`` (creating run_dir)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([*command, str(run_dir)])


def run_job(command: list[str], run_dir: Path) -> None:
    """Runs the job to its end; SystemExit if it fails."""
    if start_job(command, run_dir).wait() != 0:
        raise SystemExit(f"the training job in {run_dir} failed")


def checkpointed_step(path: Path) -> int:
    return load_checkpoint(path)[0] if path.exists() else 0


def run_and_kill(command: list[str], run_dir: Path, kill_at: int) -> int:
    """Starts the job, SIGKILLs it once its checkpoint has >= kill_at steps; returns that step."""
    job = start_job(command, run_dir)
    checkpoint = run_dir / "checkpoint.npz"
    while checkpointed_step(checkpoint) < kill_at:
        if job.poll() is not None:
            raise SystemExit("the training job ended before it could be killed")
        time.sleep(0.002)
    os.kill(job.pid, signal.SIGKILL)
    if job.wait() != -signal.SIGKILL:
        raise SystemExit("the training job finished before it could be killed")
    step = checkpointed_step(checkpoint)
    print(f"  killed with SIGKILL; last checkpoint at step {step}")
    return step


def check_resume(reference: Path, interrupted: Path, resumed_at: int, steps: int) -> list[str]:
    """Problems found comparing the resumed job with the reference; [] if none."""
    expected = read_batch_log(reference, 0)
    resumed = read_batch_log(interrupted, resumed_at)
    problems = []
    if len(expected) != steps or len(resumed) != steps - resumed_at:
        problems.append(f"{len(resumed)} batches after resuming, {steps - resumed_at} expected")
    differ = [got[0] for got in resumed if got != expected[got[0]]]
    if differ:
        problems.append(f"{len(differ)} resumed batches differ, the first at step {differ[0]}")
    if not same_weights(reference, interrupted):
        problems.append("final weights differ")
    return problems


def report_resume(
    problems: list[str], steps: int, resumed_at: int, start: float, width: int
) -> int:
    """Prints the summary's resume-check and total-time lines (labels padded to `width`
    columns, as the demo's other summary lines) and returns the demo's exit status."""
    if problems:
        print(f"  {'resume check:':{width}}FAILED: {'; '.join(problems)}")
    else:
        print(
            f"  {'resume check:':{width}}PASSED — the {steps - resumed_at} batches after the"
            f" checkpoint (step {resumed_at}) identical, final weights bit-identical"
        )
    print(f"  {'total time:':{width}}{time.perf_counter() - start:.1f} s")
    return 1 if problems else 0
