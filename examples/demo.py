"""Spelt demo: a real training job, killed with SIGKILL part way, resumes exactly.

1. Stores scikit-learn's handwritten digits (1,797 8x8 images) under build/demo/data and
   reads them through a spelt.DataLoader: global shuffle over several epochs, a Filter, a
   RandomMap augmentation and batching (see demo_data.py and demo_train.py).
2. Measures the loader on its own (records/s).
3. Trains a small numpy MLP, start to finish, in its own process.
4. Trains again in a new process that checkpoints at 40% of the steps (weights and
   ``iterator.get_state()``); as soon as the checkpoint is on disk, this script kills that
   process with SIGKILL. A third process restores the checkpoint (``it.set_state``) and
   finishes the job.
5. Checks that the interrupted + resumed job saw exactly the batches of the uninterrupted one
   (a sha256 of every batch, step by step) and ended with bit-identical weights.

Run from the repository root with ``make demo``. Exits 1 if a check fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import demo_data
import demo_train
from checkpoint import load_checkpoint, read_batch_log, same_weights

RUNS_DIR = demo_data.DATA_DIR.parent / "runs"
TRAIN_JOB = Path(__file__).resolve().parent / "demo_train.py"
CHECKPOINT_FRACTION = 0.4


def describe_pipeline(source, sizes: dict[str, int], total_steps: int) -> None:
    dropped = len(source) - demo_train.count_kept(source)
    spec = Path(demo_data.shard_spec("train")).relative_to(demo_data.REPO_ROOT)
    print(
        f"data:     {sizes['train']:,} train / {sizes['test']:,} test digits (8x8), stored as"
        f" ArrayRecord shards {spec} (+ test), read by ArrayRecordDataSource"
    )
    print(
        f"sampler:  IndexSampler(shuffle=True, seed={demo_train.SEED},"
        f" num_epochs={demo_train.NUM_EPOCHS}): a new global shuffle each epoch"
    )
    print(
        f"filter:   drop faint scans (fewer than {demo_train.MIN_INKED_PIXELS} of 64 pixels"
        f" inked): {dropped} of {len(source):,} train records each epoch"
    )
    print(
        f"augment:  RandomMap: shift by up to 1 pixel (p={demo_train.SHIFT_PROBABILITY}),"
        f" Gaussian noise (std {demo_train.NOISE_STDDEV})"
    )
    print(
        f"batch:    Batch(batch_size={demo_train.BATCH_SIZE}, drop_remainder=True):"
        f" {total_steps} steps"
    )


def measure_loader(source) -> float:
    """Records per second of the whole loader pass, with no training."""
    start, records = time.perf_counter(), 0
    for batch in demo_train.make_loader(source):
        records += len(batch["label"])
    seconds = time.perf_counter() - start
    print(f"loader alone: {records:,} records in {seconds:.2f} s")
    return records / seconds


def start_job(run_dir: Path, *args: str) -> subprocess.Popen:
    run_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, str(TRAIN_JOB), str(run_dir), *args])


def run_job(run_dir: Path, *args: str) -> None:
    if start_job(run_dir, *args).wait() != 0:
        raise SystemExit(f"the training job in {run_dir} failed")


def run_and_kill_after_checkpoint(run_dir: Path, checkpoint_at: int) -> None:
    """Starts the job and SIGKILLs it as soon as its checkpoint exists."""
    job = start_job(run_dir, "--checkpoint-at", str(checkpoint_at))
    checkpoint = run_dir / "checkpoint.npz"
    while not checkpoint.exists():
        if job.poll() is not None:
            raise SystemExit("the training job ended before writing its checkpoint")
        time.sleep(0.005)
    os.kill(job.pid, signal.SIGKILL)
    if job.wait() != -signal.SIGKILL:
        raise SystemExit("the training job finished before it could be killed")
    steps = len(read_batch_log(run_dir, 0))
    print(
        f"  killed with SIGKILL after {steps} steps; work after the checkpoint (step"
        f" {checkpoint_at}) is lost"
    )


def show_checkpoint(run_dir: Path) -> None:
    _, _, loader_state = load_checkpoint(run_dir / "checkpoint.npz")
    state = json.loads(loader_state)
    print(
        f"  checkpointed loader state: {len(loader_state)} bytes of JSON,"
        f" last_seen_indices={state['last_seen_indices']}"
    )


def check_resume(reference: Path, interrupted: Path, checkpoint_at: int) -> list[str]:
    """Problems found comparing the interrupted + resumed job with the reference; [] if none."""
    expected = read_batch_log(reference, 0)
    before_kill = [entry for entry in read_batch_log(interrupted, 0) if entry[0] < checkpoint_at]
    seen = before_kill + read_batch_log(interrupted, checkpoint_at)
    problems = []
    differ = [ref[0] for ref, got in zip(expected, seen) if ref != got]
    if differ:
        problems.append(
            f"{len(differ)} of {len(expected)} batches differ, the first at step {differ[0]}"
        )
    if len(seen) != len(expected):
        problems.append(f"{len(seen)} batches after resuming, {len(expected)} without interruption")
    if not same_weights(reference, interrupted):
        problems.append("final weights differ")
    return problems


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # keep our lines in order with the jobs' lines
    start = time.perf_counter()
    print("Spelt demo: a training job on real data, killed with SIGKILL and resumed\n")
    sizes = demo_data.prepare()
    source = demo_data.open_split("train")
    total = demo_train.total_steps(source)
    describe_pipeline(source, sizes, total)
    records_per_second = measure_loader(source)
    interval = demo_train.progress_interval(total)  # checkpoint on a progress line, so that
    checkpoint_at = round(CHECKPOINT_FRACTION * total / interval) * interval  # losses line up
    shutil.rmtree(RUNS_DIR, ignore_errors=True)
    reference, interrupted = RUNS_DIR / "uninterrupted", RUNS_DIR / "interrupted"

    print("\n[1/3] uninterrupted run, in its own process")
    run_job(reference)
    print(f"\n[2/3] new process: checkpoint at step {checkpoint_at} of {total}, then SIGKILL")
    run_and_kill_after_checkpoint(interrupted, checkpoint_at)
    show_checkpoint(interrupted)
    print("\n[3/3] new process: resume from the checkpoint and finish")
    run_job(interrupted)

    weights = dict(np.load(reference / "final_weights.npz"))
    test_accuracy = demo_train.accuracy(weights, demo_data.open_split("test"))
    problems = check_resume(reference, interrupted, checkpoint_at)
    print("\nSummary")
    print(
        f"  loader throughput: {records_per_second:,.0f} records/s"
        " (sampling, filter, augmentation, batching; no training)"
    )
    print(f"  test accuracy:     {test_accuracy:.1%} on {sizes['test']} held-out digits")
    if problems:
        print(f"  resume check:      FAILED: {'; '.join(problems)}")
    else:
        print(
            f"  resume check:      PASSED — {total} batches identical ({checkpoint_at} before"
            f" the kill, {total - checkpoint_at} after resuming), final weights bit-identical"
        )
    print(f"  total time:        {time.perf_counter() - start:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
