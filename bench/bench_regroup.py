"""Window shuffles, rebatch, FlatMapMapDataset and batch_and_pad, Spelt vs Grain (PyPI
``grain``) in the same run (``make bench``, or ``.venv/bin/python bench/bench_regroup.py
[-k W1]``).

- W1: ``WindowShuffleIterDataset`` (window 1,000) over ``MapDataset.range(N).to_iter_dataset()``.
- W2: ``WindowShuffleMapDataset`` (window 1,000) over ``MapDataset.range(N)``, read with
  ``to_iter_dataset()`` (default ReadOptions).
- W3: ``RebatchIterDataset`` of float32 rows (128 floats) batched by 48, rebatched to 64.
- W4: ``FlatMapMapDataset`` (a Python flat_map of up to 3 outputs) read with to_iter_dataset.
- W5: ``batch(64, batch_fn=partial(batch_and_pad, batch_size=64))`` over int rows of 16.

The outputs of both engines are checked equal first (Grain's first GRAIN_ELEMENTS). Each
repetition reads the whole pipeline (Grain: its first GRAIN_ELEMENTS outputs, as it is slow)
and counts output elements per second; one warm-up each, then Spelt and Grain repetitions
interleaved; medians, min-max and the ratio of the medians are printed (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import functools
import itertools
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

N = 200_000
GRAIN_ELEMENTS = 10_000  # Grain reads this many output elements per repetition (it is slow)
REPS = 3


class _Split:
    """A FlatMap transform for both engines (duck-typed: flat_map and max_fan_out)."""

    max_fan_out = 3

    def flat_map(self, x):
        return [x] * (int(x) % 4 if int(x) % 4 < 3 else 3)


def _rows(g: Any) -> Any:
    rows = np.arange(N // 4 * 128, dtype=np.float32).reshape(N // 4, 128)
    return g.MapDataset.source(rows)


CASES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "W1": (
        "WindowShuffleIterDataset w=1000",
        lambda g: g.experimental.WindowShuffleIterDataset(
            g.MapDataset.range(N).to_iter_dataset(), window_size=1000, seed=1
        ),
    ),
    "W2": (
        "WindowShuffleMapDataset w=1000",
        lambda g: g.experimental.WindowShuffleMapDataset(
            g.MapDataset.range(N), window_size=1000, seed=1
        ).to_iter_dataset(),
    ),
    "W3": (
        "RebatchIterDataset 48->64",
        lambda g: g.experimental.RebatchIterDataset(_rows(g).to_iter_dataset().batch(48), 64),
    ),
    "W4": (
        "FlatMapMapDataset (Python fn)",
        lambda g: g.experimental.FlatMapMapDataset(
            g.MapDataset.range(N // 4), _Split()
        ).to_iter_dataset(),
    ),
    "W5": (
        "batch_and_pad 64",
        lambda g: (
            g.MapDataset.source(np.arange(N // 4 * 16).reshape(N // 4, 16))
            .to_iter_dataset()
            .batch(64, batch_fn=functools.partial(g.experimental.batch_and_pad, batch_size=64))
        ),
    ),
}


def _count(ds: Any, limit: int | None) -> int:
    return sum(1 for _ in itertools.islice(ds, limit))


def _check_equal(build: Callable[[Any], Any]) -> None:
    for a, b in zip(build(spelt), itertools.islice(build(grain), GRAIN_ELEMENTS)):
        np.testing.assert_equal(a, b)


def run_case(key: str) -> float:
    label, build = CASES[key]
    _check_equal(build)
    datasets = {"Spelt": (build(spelt), None), "Grain": (build(grain), GRAIN_ELEMENTS)}
    rates: dict[str, list[float]] = {name: [] for name in datasets}
    for ds, limit in datasets.values():
        _count(ds, limit)
    for _ in range(REPS):
        for name, (ds, limit) in datasets.items():
            start = time.perf_counter()
            n = _count(ds, limit)
            rates[name].append(n / (time.perf_counter() - start))
    medians = {name: statistics.median(r) for name, r in rates.items()}
    for name, r in rates.items():
        print(
            f"  {key} {label:<32} {name:<6} {medians[name]:>14,.0f} elements/s"
            f"  ({min(r):,.0f}-{max(r):,.0f})"
        )
    ratio = medians["Spelt"] / medians["Grain"]
    print(f"  {key} {label:<32} ratio Spelt/Grain: {ratio:.1f}x")
    return ratio


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)
    keys = [k for k in CASES if args.k in k or args.k in CASES[k][0]]
    if not keys:
        return
    print(
        f"\nWindow shuffle / rebatch / flat map / batch_and_pad: {REPS} repetitions each;"
        f" Grain reads its first {GRAIN_ELEMENTS:,} outputs"
    )
    for key in keys:
        run_case(key)


if __name__ == "__main__":
    main()
