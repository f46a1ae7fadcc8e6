"""Batched reads through whole pipelines (issue 7, item 2): Spelt vs Grain and vs the limit.

Run alone with ``.venv/bin/python bench/bench_reads.py [-k PATTERN] [--reps N]``, or from
``bench/bench.py`` (``make bench``), which calls ``main`` with its ``-k``. In one process:

**M1, in-memory numpy source.** A 70,000 x 785 uint8 array (random, fixed seed) passed to
``MapDataset.source`` as is (Spelt reads its rows in C++ without the GIL), global shuffle,
batch 128, no worker processes, the default read options:

* ``MapDataset.source(arr).seed(0).shuffle().batch(128)``, iterated;
* ``MapDataset.source(arr).seed(0).shuffle().to_iter_dataset().batch(128)``;
* the numpy-gather limit: ``arr[idx]`` for each batch's 128 shuffled indices (the same
  order; index arrays prepared beforehand), the least work that makes those batches.

Goal: Spelt >= 0.5x the numpy-gather limit on both pipelines.

**R1 pipeline, ArrayRecord.** The R1 files of ``bench_array_record`` (1 KiB and 100 KiB
records, zstd group_size 1 and uncompressed group_size 64) through
``MapDataset.source(ArrayRecordDataSource(path)).seed(0).shuffle().batch(128)`` and through
``DataLoader(data_source=ArrayRecordDataSource(path), sampler=IndexSampler(shuffle=True,
seed=0, num_epochs=1), operations=[Batch(128)], worker_count=0)`` on both engines, each with
its own ``ArrayRecordDataSource`` (Grain's is array-record's reader). Goal: Spelt >= 2x Grain.

Every contender must first yield the same first batches (values, dtypes, shapes). One
unmeasured warm-up each, then ``--reps`` repetitions interleaved (Spelt, Grain, limit,
Spelt, ...); a repetition builds a fresh pipeline and reads a whole epoch, or the first
``batches`` batches where a contender is too slow for one (Grain). Reported: median
records/s, min-max, and ratios of medians; for M1 also the ratio of records per second of
CPU time (all threads), which other jobs on the machine disturb much less. The machine has
two cores shared with other jobs: the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import statistics
import threading
import time
from typing import Any, Callable, Iterable, Sequence

import numpy as np

import bench_mnist  # Grain and Spelt imported there; _assert_same and _settle are shared
import bench_array_record as bar

grain = bench_mnist.grain
spelt = bench_mnist.spelt

BATCH_SIZE = 128
REPS = 5
M1_SHAPE = (70_000, 785)
CHECKED_BATCHES = 2
GOAL_LIMIT = 0.5
R1_FILES = [
    spec
    for spec in bar.FILES
    if (spec.compression, spec.group_size) in (("zstd", 1), ("uncompressed", 64))
]


@dataclasses.dataclass
class Contender:
    """One way of making batches; `make()` returns a fresh iterable of them."""

    name: str
    make: Callable[[], Iterable[Any]]
    batches: int | None = None  # batches per repetition; None: the whole epoch
    rates: list[float] = dataclasses.field(default_factory=list)  # records/s per repetition
    # Records per second of CPU time (all threads of the process) per repetition: the work per
    # record, which other jobs on the machine disturb much less than the wall-clock rate.
    cpu_rates: list[float] = dataclasses.field(default_factory=list)

    def once(self) -> None:
        threads_before = set(threading.enumerate())
        cpu = time.process_time()
        start = time.perf_counter()
        records = 0
        for batch in itertools.islice(iter(self.make()), self.batches):
            records += len(batch)
        self.rates.append(records / (time.perf_counter() - start))
        self.cpu_rates.append(records / (time.process_time() - cpu))
        bench_mnist._settle(threads_before)  # noqa: SLF001  (Grain's read-ahead threads)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu_rates)


def check_same_batches(case: str, contenders: Sequence[Contender]) -> None:
    first = [list(itertools.islice(iter(c.make()), CHECKED_BATCHES)) for c in contenders]
    for c, batches in zip(contenders[1:], first[1:]):
        for i, (a, b) in enumerate(zip(first[0], batches)):
            where = f"{case}: batch {i} of {c.name} vs {contenders[0].name}"
            bench_mnist._assert_same(b, a, where)  # noqa: SLF001


def measure(
    case: str, contenders: Sequence[Contender], reps: int
) -> tuple[str, Sequence[Contender]]:
    """Checks the contenders' first batches, then one warm-up each and reps interleaved."""
    check_same_batches(case, contenders)
    names = ", ".join(c.name for c in contenders)
    print(f"{case}: first {CHECKED_BATCHES} batches identical ({names}); measuring")
    for c in contenders:
        c.once()
        c.rates.clear()
        c.cpu_rates.clear()
    for _ in range(reps):
        for c in contenders:
            c.once()
    return case, contenders


def _rate(c: Contender) -> str:
    return f"{c.median:,.0f} ({min(c.rates):,.0f}-{max(c.rates):,.0f})"


def _reads(c: Contender) -> str:
    return "epoch" if c.batches is None else f"{c.batches} batches"


# ---------------------------------------------------------------------------------------------
# M1.


def m1_contenders(arr: np.ndarray, pipeline: str) -> list[Contender]:
    """Spelt, Grain and the numpy-gather limit for one M1 pipeline."""

    def make(g: Any) -> Callable[[], Iterable[Any]]:
        if pipeline == "MapDataset.batch":
            return lambda: g.MapDataset.source(arr).seed(0).shuffle().batch(BATCH_SIZE)
        return lambda: (
            g.MapDataset.source(arr).seed(0).shuffle().to_iter_dataset().batch(BATCH_SIZE)
        )

    order = np.fromiter(spelt.MapDataset.range(len(arr)).seed(0).shuffle(), np.int64, len(arr))
    index_batches = [order[i : i + BATCH_SIZE] for i in range(0, len(order), BATCH_SIZE)]
    # Grain reads ~40k records/s with MapDataset.batch and ~5k with to_iter_dataset().batch
    # (16 threads taking turns at the GIL) on this machine.
    grain_batches = 150 if pipeline == "MapDataset.batch" else 30
    return [
        Contender("Spelt", make(spelt)),
        Contender("Grain", make(grain), batches=grain_batches),
        Contender("numpy gather", lambda: (arr[idx] for idx in index_batches)),
    ]


def run_m1(reps: int, pattern: str) -> list[tuple[str, Sequence[Contender]]]:
    arr = np.random.default_rng(0).integers(0, 256, M1_SHAPE, dtype=np.uint8)
    results = []
    for pipeline in ("MapDataset.batch", "to_iter_dataset().batch"):
        case = f"M1 {pipeline}"
        if pattern not in case:
            continue
        results.append(measure(case, m1_contenders(arr, pipeline), reps))
    return results


def print_m1(results: list[tuple[str, Sequence[Contender]]]) -> None:
    rows = []
    for case, (s, g, limit) in results:
        rows.append(
            (
                case,
                _rate(s),
                _rate(g),
                _reads(g),
                _rate(limit),
                f"{s.median / g.median:.1f}x",
                f"{s.median / limit.median:.2f}x",
                f"{s.cpu_median / limit.cpu_median:.2f}x",
            )
        )
    bar.print_table(
        (
            "case",
            "Spelt records/s: median (min-max)",
            "Grain",
            "Grain reads",
            "numpy gather",
            "Spelt/Grain",
            "Spelt/gather",
            "per CPU second",
        ),
        rows,
    )
    lowest = min(s.median / limit.median for _, (s, _, limit) in results)
    verdict = "met" if lowest >= GOAL_LIMIT else "NOT met"
    print(
        f"\ngoal Spelt >= {GOAL_LIMIT:g}x the numpy-gather limit: {verdict} (lowest {lowest:.2f}x)"
    )


# ---------------------------------------------------------------------------------------------
# R1 through a pipeline.


def r1_contenders(spec: bar.FileSpec, path: str, pipeline: str) -> list[Contender]:
    def make(g: Any) -> Callable[[], Iterable[Any]]:
        if pipeline == "DataLoader":
            return lambda: g.DataLoader(
                data_source=g.sources.ArrayRecordDataSource(path),
                sampler=g.samplers.IndexSampler(
                    num_records=spec.num_records,
                    shuffle=True,
                    seed=0,
                    num_epochs=1,
                    shard_options=g.sharding.NoSharding(),
                ),
                operations=[g.transforms.Batch(BATCH_SIZE)],
                worker_count=0,
            )
        return lambda: (
            g.MapDataset.source(g.sources.ArrayRecordDataSource(path))
            .seed(0)
            .shuffle()
            .batch(BATCH_SIZE)
        )

    big = spec.record_size >= (64 << 10)
    grouped = spec.group_size > 1
    # Grain reads record by record: a 100 KiB record of a group_size 64 file decodes 6.4 MB.
    grain_batches = 4 if big and grouped else 15 if big else 60
    return [
        Contender("Spelt", make(spelt), batches=40 if big and grouped else None),
        Contender("Grain", make(grain), batches=grain_batches),
    ]


def run_r1(reps: int, pattern: str) -> list[tuple[str, Sequence[Contender]]]:
    results = []
    for spec in R1_FILES:
        for pipeline in ("MapDataset", "DataLoader"):
            case = f"R1 {pipeline} {spec.label}"
            if pattern not in case:
                continue
            path = bar.ensure_file(spec, bar.Records(spec))
            print(f"{case}: {bar.warm_page_cache(path)}")
            results.append(measure(case, r1_contenders(spec, path, pipeline), reps))
    return results


def print_r1(results: list[tuple[str, Sequence[Contender]]]) -> None:
    bar.print_table(
        (
            "case",
            "Spelt records/s: median (min-max)",
            "Spelt reads",
            "Grain",
            "Grain reads",
            "Spelt/Grain",
        ),
        [
            (case, _rate(s), _reads(s), _rate(g), _reads(g), f"{s.median / g.median:.1f}x")
            for case, (s, g) in results
        ],
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=REPS, help="measured repetitions each")
    args = parser.parse_args(argv)
    print(
        f"\nBatched reads: Spelt {spelt.__version__} vs Grain, {os.cpu_count()} CPUs, "
        f"{bar._load()}; batch {BATCH_SIZE}, {args.reps} repetitions each after one warm-up, "
        "interleaved"
    )
    bar.raise_malloc_thresholds()  # as bench_array_record: figures independent of earlier work
    m1 = run_m1(args.reps, args.k)
    r1 = run_r1(args.reps, args.k)
    if m1:
        print()
        print_m1(m1)
    if r1:
        print()
        print_r1(r1)
    if not m1 and not r1:
        print(f"batched reads: no case matches -k {args.k!r}; skipped")
    print(f"end: {bar._load()}")


if __name__ == "__main__":
    main()
