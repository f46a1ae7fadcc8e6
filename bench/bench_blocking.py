"""Python code that blocks (remote reads, sleeps, native code releasing the GIL), 0 workers,
Spelt vs Grain (PyPI ``grain`` 0.2.18).

Run alone with ``.venv/bin/python bench/bench_blocking.py [-k PATTERN] [--reps N]``, or from
another script with ``bench_blocking.main([...])`` (``make bench`` does). Cases:

* B1 ``blocking source``: a data source whose ``__getitem__`` waits BLOCK_MS per record (a
  stand-in for a read from remote storage), a light ``map``, ``to_iter_dataset()`` with the
  default ``ReadOptions`` (16 threads), ``batch(32)``. Both engines run the source and the map
  on their read threads; Spelt with ``ReadOptions(num_threads=0)`` (every call in the
  consumer) is the serial reference.
* B2 ``cpu-bound map``: the same pipeline over a source that does not block, with a pure
  Python map of ~50 us per record: threads cannot help (the GIL), and must not cost much.

Records/s of the whole epoch, medians (min-max) of interleaved repetitions in one process, and
the ratios of the medians.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import grain
import numpy as np

import spelt

BLOCK_MS = 2.0
RECORDS = {"B1 blocking source": 800, "B2 cpu-bound map": 4000}
BATCH = 32


class Source:
    """`n` records, each a 16-float vector; `__getitem__` sleeps `block_s` first."""

    def __init__(self, n: int, block_s: float):
        self._n, self._block_s = n, block_s

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: int) -> np.ndarray:
        if self._block_s:
            time.sleep(self._block_s)
        return np.full(16, index, np.float32)


def light(x: np.ndarray) -> np.ndarray:
    return x * 2


def python_work(x: np.ndarray) -> np.ndarray:
    total = 0
    for i in range(1500):  # ~50 us of pure Python
        total += i
    return x + (total & 1)


def build(g: Any, case: str, options: Any) -> Any:
    blocking = case.startswith("B1")
    source = Source(RECORDS[case], BLOCK_MS / 1000 if blocking else 0.0)
    return (
        g.MapDataset.source(source)
        .map(light if blocking else python_work)
        .to_iter_dataset(options)
        .batch(BATCH)
    )


def records_per_s(g: Any, case: str, options: Any) -> float:
    start = time.perf_counter()
    n = sum(len(batch) for batch in build(g, case, options))
    return n / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    cases = [c for c in RECORDS if args.k in c]
    if not cases:
        return
    engines = {
        "Spelt": (spelt, spelt.ReadOptions()),
        "Grain": (grain, grain.ReadOptions()),
        "Spelt, num_threads=0": (spelt, spelt.ReadOptions(num_threads=0)),
    }
    print(f"\nB1-B2: Python code on the read threads, 0 workers, batch {BATCH}, {args.reps} reps")
    print("| case | Spelt rec/s | Grain rec/s | Spelt num_threads=0 | Spelt / Grain |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for case in cases:
        a = [list(build(g, case, o)) for g, o in list(engines.values())[:2]]
        assert all(np.array_equal(x, y) for x, y in zip(*a)), f"{case}: outputs differ"
        rates: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(args.reps):
            for name, (g, options) in engines.items():
                rates[name].append(records_per_s(g, case, options))
        med = {name: statistics.median(r) for name, r in rates.items()}
        cells = [f"{med[n]:,.0f} ({min(rates[n]):,.0f}-{max(rates[n]):,.0f})" for n in engines]
        print(f"| {case} | {' | '.join(cells)} | {med['Spelt'] / med['Grain']:.2f}x |")


if __name__ == "__main__":
    main()
