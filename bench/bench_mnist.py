"""Side-by-side throughput of Spelt and Grain (PyPI ``grain``) on the same pipelines.

Part of ``make bench`` (bench/bench.py runs it first), or ``.venv/bin/python
bench/bench_mnist.py [-k PATTERN]``. The other benches share its source and checks. Each case in
``CASES`` builds one pipeline twice, once per engine, from the same source object. For each
case the bench

1. checks that both engines yield identical first batches (same shuffle order, same values,
   same dtypes), which proves they do the same work;
2. runs one warm-up repetition per engine, then interleaves the measured repetitions
   (Spelt, Grain, Spelt, Grain, ...) so that drift of the machine hits both alike;
3. reports the median records/s of each engine, its spread (min-max) and the ratio of the
   medians.

A repetition builds a fresh pipeline and iterator and reads a whole epoch, or the first
``grain_batches`` batches where Grain is too slow for a whole one. Its clock covers building,
the first batch (start-up) and every later batch. See docs/benchmarks.md for the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gc
import importlib.metadata
import itertools
import logging
import os
import platform
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

# Grain logs a warning at import when jax is missing; it is irrelevant here.
logging.getLogger("absl").setLevel(logging.ERROR)

import grain  # noqa: E402  (PyPI grain, the reference)
import spelt  # noqa: E402

NUM_RECORDS = 70_000
IMAGE_SIZE = 784
BATCH_SIZE = 128
SPELT_REPS = 5
GRAIN_REPS = 3
CHECKED_BATCHES = 3
GOAL_RATIO = 10.0


class MnistLikeSource:
    """In-memory MNIST-sized source: 70,000 records of 784 uint8 and an int label.

    Random content from a fixed seed. Records are ``{"image": uint8[784], "label": int}``.
    The repr is stable, as Grain's and Spelt's DataLoader checkpoints compare it.
    """

    def __init__(self, num_records: int = NUM_RECORDS, seed: int = 0):
        rng = np.random.default_rng(seed)
        self._images = rng.integers(0, 256, (num_records, IMAGE_SIZE), dtype=np.uint8)
        self._labels = rng.integers(0, 10, num_records)
        self._seed = seed

    def __len__(self) -> int:
        return len(self._labels)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {"image": self._images[index], "label": int(self._labels[index])}

    @property
    def images(self) -> np.ndarray:
        """The images as one uint8 array [num_records, 784] (itself a data source)."""
        return self._images

    def __repr__(self) -> str:
        return f"MnistLikeSource(num_records={len(self)}, seed={self._seed})"


# An engine is the module `spelt` or `grain`: Spelt is call-compatible, so one function
# `make(engine, source)` builds the same pipeline on both.
Pipeline = Callable[[Any, Any], Iterable[Any]]


@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark: a pipeline built once per engine over the same source.

    Attributes:
      name: shown in the table; ``-k`` selects cases by substring.
      spelt: builds Spelt's iterable of batches from the source.
      grain: builds Grain's iterable of batches from the source.
      grain_batches: batches read per Grain repetition; None reads the whole epoch.
    """

    name: str
    spelt: Callable[[Any], Iterable[Any]]
    grain: Callable[[Any], Iterable[Any]]
    grain_batches: int | None = None

    @classmethod
    def same_code(cls, name: str, make: Pipeline, grain_batches: int | None = None) -> Case:
        """A case whose pipeline is the same code on both engines."""
        return cls(
            name,
            spelt=lambda source: make(spelt, source),
            grain=lambda source: make(grain, source),
            grain_batches=grain_batches,
        )


def data_loader(
    read_options_threads: int | None = None, source_of: Callable[[Any, Any], Any] | None = None
) -> Pipeline:
    """DataLoader: shuffled IndexSampler over one epoch, Batch(128), no worker processes.

    ``read_options_threads`` None keeps the default ReadOptions (16 reader threads).
    ``source_of(engine, source)``, if given, reads another source of the same length.
    """

    def make(g: Any, source: Any) -> Iterable[Any]:
        read_options = None
        if read_options_threads is not None:
            read_options = g.ReadOptions(num_threads=read_options_threads)
        if source_of is not None:
            source = source_of(g, source)
        return g.DataLoader(
            data_source=source,
            sampler=g.samplers.IndexSampler(
                num_records=len(source),
                shuffle=True,
                seed=0,
                num_epochs=1,
                shard_options=g.sharding.NoSharding(),
            ),
            operations=[g.transforms.Batch(batch_size=BATCH_SIZE)],
            worker_count=0,
            read_options=read_options,
        )

    return make


def range_source(g: Any, source: Any) -> Any:
    """The engine's RangeDataSource over as many ints as the source has records."""
    return g.sources.RangeDataSource(0, len(source), 1)


def numpy_source(g: Any, source: Any) -> Any:
    """The source's images as a plain numpy array (a data source too)."""
    del g
    return source.images


def map_dataset_batch(g: Any, source: Any) -> Iterable[Any]:
    """Dataset API, batching on the random-access side, iterated (default read-ahead)."""
    return g.MapDataset.source(source).shuffle(seed=0).batch(BATCH_SIZE)


def iter_dataset_batch(g: Any, source: Any) -> Iterable[Any]:
    """Dataset API, batching on the stream after the default read-ahead."""
    return g.MapDataset.source(source).shuffle(seed=0).to_iter_dataset().batch(BATCH_SIZE)


# Grain reads ~4k records/s on the default 16-thread cases (on 2 cores), so those read 100
# batches per repetition instead of the 547 of an epoch; everything else reads whole epochs.
CASES = [
    Case.same_code("DataLoader", data_loader(), grain_batches=100),
    Case.same_code("DataLoader, num_threads=0", data_loader(read_options_threads=0)),
    Case.same_code(
        "DataLoader, RangeDataSource", data_loader(source_of=range_source), grain_batches=100
    ),
    Case.same_code(
        "DataLoader, numpy array", data_loader(source_of=numpy_source), grain_batches=100
    ),
    Case.same_code("MapDataset.shuffle.batch", map_dataset_batch),
    Case.same_code("to_iter_dataset().batch", iter_dataset_batch, grain_batches=100),
]


def _num_records(batch: Any) -> int:
    """Leading dimension of the batch's first array."""
    while isinstance(batch, (dict, list, tuple)):
        batch = next(iter(batch.values())) if isinstance(batch, dict) else batch[0]
    return len(batch)


def _assert_same(a: Any, b: Any, where: str = "batch") -> None:
    """Asserts two batches are equal: same structure, keys, shapes, dtypes and values."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            _assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, f"{where}: dtype {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"{where}: shape {a.shape} != {b.shape}"
        assert np.array_equal(a, b), f"{where}: values differ"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def check_same_batches(case: Case, source: Any) -> None:
    """Asserts that both engines yield the same first CHECKED_BATCHES batches."""
    threads_before = set(threading.enumerate())
    spelt_batches = list(itertools.islice(iter(case.spelt(source)), CHECKED_BATCHES))
    grain_batches = list(itertools.islice(iter(case.grain(source)), CHECKED_BATCHES))
    assert len(spelt_batches) == len(grain_batches) == CHECKED_BATCHES
    for i, (s, g) in enumerate(zip(spelt_batches, grain_batches)):
        _assert_same(s, g, f"{case.name}: batch {i}")
    _settle(threads_before)


def _settle(threads_before: set[threading.Thread], timeout_s: float = 10.0) -> None:
    """Frees finished iterators and joins the Python threads started since threads_before.

    Grain's read-ahead threads finish their current record after the iterator is dropped;
    left running, they would slow the next repetition, which may be the other engine's.
    """
    gc.collect()
    deadline = time.monotonic() + timeout_s
    for thread in set(threading.enumerate()) - threads_before:
        thread.join(max(0.0, deadline - time.monotonic()))


def run_once(build: Callable[[Any], Iterable[Any]], source: Any, max_batches: int | None) -> float:
    """Records/s of one repetition: build, iterate max_batches (None: all), stop the clock."""
    threads_before = set(threading.enumerate())
    start = time.perf_counter()
    records = 0
    for batch in itertools.islice(iter(build(source)), max_batches):
        records += _num_records(batch)
    elapsed = time.perf_counter() - start
    if max_batches is None:
        assert records == len(source), f"an epoch gave {records} records, not {len(source)}"
    _settle(threads_before)
    return records / elapsed


@dataclasses.dataclass
class Result:
    """Records/s of every measured repetition of one case."""

    case: Case
    spelt: list[float]
    grain: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(self.spelt) / statistics.median(self.grain)


def measure(case: Case, source: Any) -> Result:
    """One warm-up per engine, then SPELT_REPS and GRAIN_REPS repetitions, interleaved."""
    spelt_once = functools.partial(run_once, case.spelt, source, None)
    grain_once = functools.partial(run_once, case.grain, source, case.grain_batches)
    spelt_once()
    grain_once()
    result = Result(case, [], [])
    for i in range(max(SPELT_REPS, GRAIN_REPS)):
        if i < SPELT_REPS:
            result.spelt.append(spelt_once())
        if i < GRAIN_REPS:
            result.grain.append(grain_once())
    return result


def _rate(values: list[float]) -> str:
    """Median records/s and the spread, e.g. '612,345 (580,001-640,123)'."""
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def print_table(results: list[Result]) -> None:
    columns = (
        "case",
        "Spelt records/s: median (min-max)",
        "Grain records/s: median (min-max)",
        "Grain reads",
        "Spelt/Grain",
    )
    rows = [
        (
            r.case.name,
            _rate(r.spelt),
            _rate(r.grain),
            f"{r.case.grain_batches} batches" if r.case.grain_batches else "epoch",
            f"{r.ratio:.1f}x",
        )
        for r in results
    ]
    widths = [max(len(row[k]) for row in [columns, *rows]) for k in range(len(columns))]
    for row in [columns, *rows]:
        print(
            f"{row[0]:<{widths[0]}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(row[1:], widths[1:]))
        )


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.k in c.name]
    if not cases:
        return

    print(
        f"Spelt {spelt.__version__} vs Grain {importlib.metadata.version('grain')}, "
        f"Python {platform.python_version()}, commit {_commit()}, {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"source: {NUM_RECORDS:,} records of {IMAGE_SIZE} uint8 + int label; batch {BATCH_SIZE}; "
        f"{SPELT_REPS} Spelt / {GRAIN_REPS} Grain repetitions after one warm-up each\n"
    )

    source = MnistLikeSource()
    results = []
    for case in cases:
        check_same_batches(case, source)
        print(
            f"{case.name}: first {CHECKED_BATCHES} batches identical on Spelt and Grain; measuring"
        )
        results.append(measure(case, source))
    print()
    print_table(results)
    lowest = min(r.ratio for r in results)
    verdict = "met" if lowest >= GOAL_RATIO else "NOT met"
    print(f"\ngoal Spelt >= {GOAL_RATIO:g}x Grain: {verdict} (lowest ratio {lowest:.1f}x)")


if __name__ == "__main__":
    main()
