"""O1: the cost of execution-summary tracking (python/spelt/_summary.py, cpp/src/exec/stage_stats.cc).

Run alone with ``.venv/bin/python bench/bench_summary.py [-k PATTERN] [--reps N]``, or from
``bench/bench.py`` (``make bench``). Each case reads one epoch of a pipeline over 70,000
MNIST-sized records (bench_mnist.MnistLikeSource) with tracking off and with it on
(``DatasetOptions(execution_tracking_mode=STAGE_TIMING)``), alternating off, on, off, ...
after one warm-up each; reported are median records per wall second and per CPU second of the
process, spreads, and the ratio of the CPU medians. Goal (issue 11): tracking on costs <= 5%.

With tracking off, no element passes through any profiling code: the only cost is one check
per ``iter()``, timed here on its own and given as a share of the epoch.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import timeit

import numpy as np

logging.getLogger("absl").setLevel(logging.ERROR)

import bench_mnist  # noqa: E402  (MnistLikeSource)
import spelt  # noqa: E402
from spelt import _summary  # noqa: E402
from spelt.experimental import (  # noqa: E402
    DatasetOptions,
    ExecutionTrackingMode,
    WithOptionsIterDataset,
)

REPS = 9
GOAL = 1.05
TRACKED = DatasetOptions(execution_tracking_mode=ExecutionTrackingMode.STAGE_TIMING)


def _normalize(record):
    return {"image": record["image"].astype(np.float32) / 255.0, "label": record["label"]}


def _cases(source):
    return {
        "native (images array: shuffle, batch)": lambda: (
            spelt.MapDataset.source(source.images)
            .seed(1)
            .shuffle()
            .to_iter_dataset()
            .batch(bench_mnist.BATCH_SIZE)
        ),
        "python map (dict records: shuffle, map, batch)": lambda: (
            spelt.MapDataset.source(source)
            .seed(1)
            .shuffle()
            .map(_normalize)
            .to_iter_dataset()
            .batch(bench_mnist.BATCH_SIZE)
        ),
    }


def _epoch(ds) -> tuple[float, float]:
    """(records per wall second, records per CPU second of this process)."""
    start, cpu = time.perf_counter(), time.process_time()
    n = 0
    for batch in ds:
        n += len(batch["label"]) if isinstance(batch, dict) else len(batch)
    return n / (time.perf_counter() - start), n / (time.process_time() - cpu)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=REPS)
    args = parser.parse_args(argv)
    source = bench_mnist.MnistLikeSource()
    cases = {k: v for k, v in _cases(source).items() if args.k in f"O1 {k}"}
    if not cases:
        return
    print(
        f"\nO1 execution-summary tracking: {args.reps} repetitions of an epoch each, off and on"
        " alternated; records per second of wall time and of process CPU time (the CPU figure"
        " is the one judged: other processes on a shared machine move wall times by more than 5%)"
    )
    print(
        f"{'case':<48} {'off wall':>10} {'on wall':>10} {'off cpu':>10} {'on cpu':>10}"
        f" {'off/on cpu':>10}  cpu spread off | on"
    )
    worst = 0.0
    for name, build in cases.items():
        off, on = [], []
        _epoch(build()), _epoch(WithOptionsIterDataset(build(), TRACKED))  # warm-up
        for _ in range(args.reps):
            off.append(_epoch(build()))
            on.append(_epoch(WithOptionsIterDataset(build(), TRACKED)))
        wall_off, cpu_off = (statistics.median(x) for x in zip(*off))
        wall_on, cpu_on = (statistics.median(x) for x in zip(*on))
        ratio = cpu_off / cpu_on
        worst = max(worst, ratio)
        spread_off = f"{min(c for _, c in off):,.0f}-{max(c for _, c in off):,.0f}"
        spread_on = f"{min(c for _, c in on):,.0f}-{max(c for _, c in on):,.0f}"
        print(
            f"{name:<48} {wall_off:>10,.0f} {wall_on:>10,.0f} {cpu_off:>10,.0f} {cpu_on:>10,.0f}"
            f" {ratio:>9.3f}x  {spread_off} | {spread_on}"
        )
    ds = next(iter(cases.values()))()
    check_s = (
        min(timeit.repeat(lambda: _summary.tracking_enabled(ds), number=1000, repeat=5)) / 1000
    )
    print(f"tracking off: {check_s * 1e6:.2f} us per iter() (the only cost), per-element cost 0")
    verdict = "met" if worst <= GOAL else "NOT met"
    print(f"goal tracking on <= {GOAL:g}x off (CPU time): {verdict} (worst {worst:.3f}x)")


if __name__ == "__main__":
    main()
