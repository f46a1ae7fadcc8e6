"""InterleaveIterDataset, ThreadPrefetchIterDataset and CacheIterDataset, Spelt vs Grain
(PyPI ``grain``) in the same run (``make bench``, or ``.venv/bin/python bench/bench_interleave.py [-k I1]``).

- I1: ``InterleaveIterDataset`` of 16 datasets of 5,000 elements (``MapDataset.range(n).to_iter_dataset()``,
  no Python per element below it), cycle length 4, default buffers: elements/s.
- I2: ``ThreadPrefetchIterDataset(ds.to_iter_dataset().batch(32), prefetch_buffer_size=8)``
  over an in-memory array source of 20,000 float32 rows (64 values): batches/s.
- I3: ``CacheIterDataset`` then ``RepeatIterDataset(num_epochs=5)`` over a 20,000-element
  range: elements/s over the 5 epochs (4 of them from the cache).

Outputs are checked equal first. One warm-up each, then Spelt and Grain repetitions
interleaved; medians, min-max and the ratio of the medians (Spelt / Grain) are printed.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

logging.getLogger("absl").setLevel(logging.ERROR)

import grain  # noqa: E402
import grain.experimental  # noqa: E402, F401

import spelt  # noqa: E402
import spelt.experimental  # noqa: E402, F401

REPS = 5
ROWS = np.arange(20_000 * 64, dtype=np.float32).reshape(20_000, 64)


def interleave(g: Any) -> Any:
    datasets = [
        g.MapDataset.range(i * 10**6, i * 10**6 + 5_000).to_iter_dataset() for i in range(16)
    ]
    return g.experimental.InterleaveIterDataset(datasets, cycle_length=4)


def thread_prefetch(g: Any) -> Any:
    ds = g.MapDataset.source(ROWS).to_iter_dataset().batch(32)
    return g.experimental.ThreadPrefetchIterDataset(ds, prefetch_buffer_size=8)


def cache(g: Any) -> Any:
    ds = g.experimental.CacheIterDataset(g.MapDataset.range(20_000).to_iter_dataset())
    return g.experimental.RepeatIterDataset(ds, num_epochs=5)


def rate(build: Callable[[Any], Any], g: Any) -> float:
    start = time.perf_counter()
    n = sum(1 for _ in build(g))
    return n / (time.perf_counter() - start)


CASES = (
    ("I1 interleave 16 x 5k, cycle 4", interleave, "elements/s"),
    ("I2 thread prefetch, batch 32", thread_prefetch, "batches/s"),
    ("I3 cache + repeat 5", cache, "elements/s"),
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)
    for name, build, unit in CASES:
        if args.k not in name:
            continue
        for a, b in zip(build(spelt), build(grain)):
            np.testing.assert_equal(a, b)
        rate(build, spelt), rate(build, grain)  # warm-up
        results: dict[str, list[float]] = {"spelt": [], "grain": []}
        for _ in range(REPS):
            results["spelt"].append(rate(build, spelt))
            results["grain"].append(rate(build, grain))
        s, g = (statistics.median(results[k]) for k in ("spelt", "grain"))
        print(
            f"{name}: Spelt {s:,.0f} {unit} (min {min(results['spelt']):,.0f}, max"
            f" {max(results['spelt']):,.0f}); Grain {g:,.0f} (min {min(results['grain']):,.0f},"
            f" max {max(results['grain']):,.0f}); ratio {s / g:.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
