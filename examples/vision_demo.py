"""Spelt vision demo: native image augmentation feeding a training job, killed with SIGKILL,
resumed exactly.

1. Cuts a few hundred JPEGs (with labels) from scikit-learn's two sample photographs and stores
   them as ArrayRecord (vision_data.py).
2. Reads one epoch of the train pipeline (shuffle, decode, RandomResizedCrop(64), flip,
   normalise, batch) three ways and prints images/s: Spelt running
   ``spelt.vision.train_transforms`` natively (C++ on 2 read threads, no worker processes), and
   the same pipeline written with Pillow (vision_data.PIL_TRAIN) with 2 worker processes under
   Spelt and under Grain. The Pillow pipeline draws the same crops and flips, and Spelt's
   output does not depend on the worker count, so under Spelt its batches hold the native
   batches' images (equal where the fused decode does not scale, else within the PSNR bound of
   docs/vision.md).
3. Trains a tiny numpy classifier (vision_train.py) in its own process, start to finish.
4. Trains again in a new process that checkpoints after every step; this script kills it with
   SIGKILL once its checkpoint reaches ``--kill-at`` steps. A third process resumes from the last
   checkpoint and finishes.
5. Checks that the resumed batches (a sha256 per step) equal the uninterrupted run's and that the
   final weights are bit-identical.

Run from the repository root with ``make demo-vision``. Exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from pathlib import Path

import numpy as np

import spelt

import vision_data
from kill_resume import check_resume, report_resume, run_and_kill, run_job

TRAIN_JOB = Path(__file__).resolve().parent / "vision_train.py"


def measure(g, args, *, native: bool, workers: int) -> dict:
    """One epoch: images/s after the first batch, seconds to the first batch, the batches after
    the first (copied out of the loader's buffers)."""
    start = time.perf_counter()
    it = iter(
        vision_data.make_dataset(
            g, args.data_dir, native=native, epochs=1, batch_size=args.batch_size, workers=workers
        )
    )
    batches = [next(it)]
    first = time.perf_counter()
    batches += [(np.array(images), np.array(labels)) for images, labels in it]  # own copies
    rate = sum(len(labels) for _, labels in batches[1:]) / (time.perf_counter() - first)
    del it  # Grain unlinks its shared memory when the iterator goes
    return {"rate": rate, "first": first - start, "batches": batches[1:]}


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """PSNR in dB of two normalised float images, in 0-255 pixel levels."""
    levels = (a - b) * 255 * np.asarray(vision_data.vision.IMAGENET_STD, np.float32)
    mse = float(np.mean(levels.astype(np.float64) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def job_command(args) -> list[str]:
    """vision_train.py's command line, to which kill_resume appends the run directory."""
    return [
        sys.executable,
        str(TRAIN_JOB),
        "--data-dir",
        str(args.data_dir),
        "--batch-size",
        str(args.batch_size),
        "--steps",
        str(args.steps),
        "--epochs",
        str(args.epochs),
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=vision_data.DATA_DIR)
    parser.add_argument("--images", type=int, default=384)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--kill-at", type=int, default=15, help="kill once this step is saved")
    args = parser.parse_args(argv)
    if not 0 < args.kill_at < args.steps:
        parser.error("--kill-at must be between 0 and --steps")
    per_epoch = args.images // args.batch_size
    if per_epoch < 2:
        parser.error("--images must hold at least two batches")
    args.epochs = -(-args.steps // per_epoch)
    return args


def main(argv: list[str] | None = None) -> int:
    sys.stdout.reconfigure(line_buffering=True)  # keep our lines in order with the jobs' lines
    logging.getLogger("absl").setLevel(logging.ERROR)  # Grain warns that jax is missing
    import grain  # PyPI grain 0.2.18
    from absl import flags

    flags.FLAGS.mark_as_parsed()  # Grain's worker processes read its flags

    args = parse_args(argv)
    start = time.perf_counter()
    print("Spelt vision demo: native augmentation from ArrayRecord, killed and resumed\n")
    shutil.rmtree(args.data_dir, ignore_errors=True)
    made = vision_data.prepare(args.images, args.data_dir)
    print(
        f"data:     {made['images']} JPEGs cut from scikit-learn's china.jpg and flower.jpg"
        f" ({made['bytes'] / made['images'] / 1e3:.0f} kB each), {vision_data.NUM_CLASSES}"
        f" classes, one ArrayRecord file ({time.perf_counter() - start:.1f} s to make)\n"
        f"pipeline: zip(images, labels) -> shuffle -> DecodeImage -> RandomResizedCrop"
        f"({vision_data.SIZE}) -> RandomHorizontalFlip -> Normalize -> batch({args.batch_size})"
    )
    print("\nOne epoch of the input pipeline alone (images/s after the first batch):")
    cases = {
        "Spelt, native spelt.vision, 2 threads": (spelt, True, 0),
        "Spelt, Pillow pipeline, 2 workers": (spelt, False, 2),
        "Grain, Pillow pipeline, 2 workers": (grain, False, 2),
    }
    results = {}
    for name, (g, native, workers) in cases.items():
        results[name] = r = measure(g, args, native=native, workers=workers)
        print(f"  {name:40s} {r['rate']:7.0f} images/s  (first batch {r['first']:.2f} s)")
    native, *pil = results.values()
    ratios = ", ".join(f"{native['rate'] / r['rate']:.1f}x" for r in pil)
    print(f"  native speed-up over the two Pillow pipelines: {ratios}")
    worst = min(
        psnr(a, b) for x, y in zip(native["batches"], pil[0]["batches"]) for a, b in zip(x[0], y[0])
    )
    labels_same = all(
        np.array_equal(x[1], y[1]) for x, y in zip(native["batches"], pil[0]["batches"])
    )
    print(
        f"  native vs Pillow under Spelt: labels {'identical' if labels_same else 'DIFFERENT'},"
        f" least PSNR of an image {worst:.1f} dB"
    )

    runs = args.data_dir.parent / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    reference, interrupted = runs / "uninterrupted", runs / "interrupted"
    command = job_command(args)
    print(f"\n[1/3] uninterrupted run of {args.steps} steps, in its own process")
    run_job(command, reference)
    print(f"\n[2/3] new process, checkpoint every step, SIGKILL once step {args.kill_at} is saved")
    resumed_at = run_and_kill(command, interrupted, args.kill_at)
    print("\n[3/3] new process: resume from the last checkpoint and finish")
    run_job(command, interrupted)
    problems = check_resume(reference, interrupted, resumed_at, args.steps)
    if not labels_same or worst < 38.0:
        problems.append("the native images differ from the Pillow pipeline's")

    print("\nSummary")
    print(f"  native input pipeline: {ratios} the images/s of the Pillow pipelines")
    return report_resume(problems, args.steps, resumed_at, start, 23)


if __name__ == "__main__":
    sys.exit(main())
