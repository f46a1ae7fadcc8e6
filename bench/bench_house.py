"""H1-H3 and BP (issue 19): this build against an earlier one, side by side in one run.

Run with ``.venv/bin/python bench/bench_house.py --baseline PYTHON [-k PATTERN] [--reps N]``,
where PYTHON is the interpreter of a virtual environment with the earlier build installed
(for example ``git worktree add ../base c184897 && make -C ../base python``, then
``../base/.venv/bin/python``). Without ``--baseline`` only this build is measured. Each
repetition is a fresh child process of one build running one case; the builds alternate
(this, baseline, this, ...), so that drift of the machine hits both. Only public API (Grain's
names) is used, so the same case code runs on both builds.

Cases (records: ``{"image": uint8[784], "label": int64}`` rows of an in-memory source; a
Python map that spins for ~50 us, calibrated once by the parent and passed to every child):

* **H1**: ``DataLoader(operations=[Map(~50 us), Batch(64)], worker_count=2)``, shuffled. The
  consumer process's CPU time per record (all its threads, ``getrusage``) and records/s.
  Goal: CPU per record at most half of the baseline's, records/s not lower.
* **H2**: ``MapDataset.source(src).map(~50 us).to_iter_dataset().batch(64)
  .mp_prefetch(MultiprocessingOptions(num_workers=2))``. The worker processes' CPU time per
  element (every process below the consumer, ``/proc/PID/stat``) minus the map's own CPU
  time per call (measured in the child). Goal: at most half of the baseline's.
* **H3**: a 70,000 x 785 uint8 array, shuffled, batch 128, no workers, on three faces:
  ``DataLoader(operations=[Batch(128)], worker_count=0)``, ``MapDataset...shuffle()
  .to_iter_dataset().batch(128)`` and ``MapDataset...shuffle().batch(128)``; each as a ratio
  to one numpy fancy-index gather per batch of the same indices, timed in the same child.
  Goal: each face at least 0.5x the gather.
* **BP** (item 4, one buffer pool): CPU time and minor page faults (``getrusage``) of the
  paths whose large buffers come from the pool (cpp/src/base/buffer_pool.h), one pass each
  after a warm-up pass, in one child: ``ParquetIterDataset(...).batch(128)`` over 262,144 rows
  of bench_parquet's table (4 row groups); ``ArrayRecordDataSource.__getitems__`` over
  consecutive ranges of 1,024 keys, and over random batches of 128 keys (a quarter of the
  file), of 20,000 records of 6-10 KB (zstd, group_size 64); every record of that file through
  ``MapDataset.source(...).to_iter_dataset()``; ranges of 1,024 keys of 8,192 such records
  uncompressed in chunks of 1,024; and three epochs of H3's array through
  ``MapDataset...shuffle().batch(2048)`` (1.6 MB batches). The files are written once into
  ``build/bench/house/``. Goal: no more CPU or faults than the baseline beyond noise.

H1 and H2 are timed in steady state, from the 10th batch to the 10th before the end (worker
processes take seconds to start); H3 over whole epochs (start-up takes milliseconds, and a
read-ahead deep enough to compute most of an epoch before its 10th batch would hide its work
from a steady-state window). Start-up (building the pipeline to its first batch) is reported
apart. Reported: the medians over repetitions, and
this build / baseline for each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import proc_stats

MAP_US = 50.0
H12_RECORDS = 12_800
H3_SHAPE = (70_000, 785)
STEADY_FROM = 10  # batches read before steady-state timing starts
H3_REPS = 5  # alternating gather / face epochs in one child
CASES = ("H1", "H2", "H3", "BP")
BP_DIR = Path(__file__).resolve().parent.parent / "build" / "bench" / "house"
BP_ROWS = 262_144
BP_FILES = {  # name: (options, records)
    "zstd_g64.array_record": ("zstd:3,group_size:64", 20_000),
    "none_g1024.array_record": ("uncompressed,group_size:1024", 8_192),
}


class MnistLikeRows:
    """`num_records` records {"image": uint8[784], "label": int64}; stable repr."""

    def __init__(self, num_records: int):
        rng = np.random.default_rng(0)
        self._images = rng.integers(0, 256, (num_records, 784), np.uint8)
        self._labels = rng.integers(0, 10, num_records)

    def __len__(self) -> int:
        return len(self._images)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {"image": self._images[index], "label": self._labels[index]}

    def __repr__(self) -> str:
        return f"MnistLikeRows({len(self)})"


class Spin:
    """A Python map that spins `rounds` loop iterations (about MAP_US) and returns its input."""

    def __init__(self, rounds: int):
        self.rounds = rounds

    def __call__(self, element: Any) -> Any:
        for _ in range(self.rounds):
            pass
        return element


def calibrate_rounds() -> int:
    """Rounds of Spin that take about MAP_US of CPU here."""
    rounds = 1000
    for _ in range(3):
        spin, start = Spin(rounds), time.process_time()
        for _ in range(2000):
            spin(None)
        rounds = max(1, round(rounds * MAP_US / ((time.process_time() - start) / 2000 * 1e6)))
    return rounds


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _descendants_cpu_s() -> float:
    """CPU seconds of every live process below this one (utime + stime, all threads)."""
    total = 0
    for pid in proc_stats.descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _cpu_marks() -> tuple[float, float, float]:
    return time.perf_counter(), _cpu_s(), _descendants_cpu_s()


def _timed_epoch(
    make: Callable[[], Any], count: Callable[[Any], int], batches: int, steady: bool
) -> dict[str, float]:
    """Builds and reads one epoch of `batches` batches: start-up seconds (to the first batch),
    records/s and the consumer's and its descendants' CPU microseconds per record, over the
    whole epoch or, with `steady`, from the STEADY_FROM-th batch to the STEADY_FROM-th before
    the end (while worker processes still live and read ahead as much as at its start)."""
    start = _cpu_marks()
    iterator = iter(make())
    marks = [] if steady else [(*start, 0)]  # (seconds, consumer CPU, descendants' CPU, records)
    records = 0
    for i, batch in enumerate(iterator, 1):
        records += count(batch)
        if i == 1:
            startup_s = time.perf_counter() - start[0]
        if steady and i in (STEADY_FROM, batches - STEADY_FROM):
            marks.append((*_cpu_marks(), records))
    if i != batches:
        raise AssertionError(f"{i} batches, expected {batches}")
    if not steady:
        marks.append((*_cpu_marks(), records))
    (t0, cpu0, child0, records0), (t1, cpu1, child1, records1) = marks
    n = records1 - records0
    del iterator
    return {
        "startup_s": startup_s,
        "records_per_s": n / (t1 - t0),
        "consumer_cpu_us": (cpu1 - cpu0) / n * 1e6,
        "workers_cpu_us": (child1 - child0) / n * 1e6,
    }


def _rows(batch: Any) -> int:
    return len(batch["label"]) if isinstance(batch, dict) else len(batch)


def run_h1(g: Any, rounds: int) -> dict[str, float]:
    source = MnistLikeRows(H12_RECORDS)

    class SpinMap(g.transforms.Map):
        def __init__(self):
            self._spin = Spin(rounds)

        def map(self, element):
            return self._spin(element)

    def make():
        return _shuffled_loader(g, source, [SpinMap(), g.transforms.Batch(64)], worker_count=2)

    return _timed_epoch(make, _rows, H12_RECORDS // 64, steady=True)


def _shuffled_loader(g: Any, source: Any, operations: list[Any], worker_count: int) -> Any:
    """One epoch of `source`, shuffled (seed 0), through `operations`."""
    sampler = g.samplers.IndexSampler(
        num_records=len(source),
        shuffle=True,
        seed=0,
        num_epochs=1,
        shard_options=g.sharding.NoSharding(),
    )
    return g.DataLoader(
        data_source=source, sampler=sampler, operations=operations, worker_count=worker_count
    )


def _map_cpu_us(rounds: int) -> float:
    spin, start = Spin(rounds), time.process_time()
    for _ in range(2000):
        spin(None)
    return (time.process_time() - start) / 2000 * 1e6


def run_h2(g: Any, rounds: int) -> dict[str, float]:
    source = MnistLikeRows(H12_RECORDS)

    def make():
        ds = g.MapDataset.source(source).seed(0).shuffle().map(Spin(rounds))
        ds = ds.to_iter_dataset().batch(64)
        return ds.mp_prefetch(g.multiprocessing.MultiprocessingOptions(num_workers=2))

    result = _timed_epoch(make, _rows, H12_RECORDS // 64, steady=True)
    map_us = statistics.median(_map_cpu_us(rounds) for _ in range(3))
    result["map_cpu_us"] = map_us
    result["workers_outside_map_us"] = result["workers_cpu_us"] - map_us
    return result


def run_h3(g: Any) -> dict[str, float]:
    array = np.random.default_rng(0).integers(0, 256, H3_SHAPE, np.uint8)
    faces = {
        "DataLoader": lambda: _shuffled_loader(g, array, [g.transforms.Batch(128)], 0),
        "to_iter_dataset().batch": lambda: (
            g.MapDataset.source(array).seed(0).shuffle().to_iter_dataset().batch(128)
        ),
        "MapDataset.batch": lambda: g.MapDataset.source(array).seed(0).shuffle().batch(128),
    }
    order = np.random.default_rng(1).permutation(len(array))
    indices = [order[i : i + 128] for i in range(0, len(order), 128)]
    ratios: dict[str, list[float]] = {}
    for _ in range(H3_REPS):
        for name, make in faces.items():
            gather = _timed_epoch(
                lambda: (array[i] for i in indices), len, len(indices), steady=False
            )
            face = _timed_epoch(make, len, len(indices), steady=False)
            for key, value in (
                ("startup_s", face["startup_s"]),
                ("/ gather", face["records_per_s"] / gather["records_per_s"]),
                ("/ gather (CPU time)", gather["consumer_cpu_us"] / face["consumer_cpu_us"]),
            ):
                ratios.setdefault(f"{name} {key}", []).append(value)
    return {key: statistics.median(values) for key, values in ratios.items()}


def write_bp_files() -> None:
    """BP's Parquet and ArrayRecord files, unless there (written by this build)."""
    import bench_parquet
    import pyarrow.parquet as pq
    import spelt

    BP_DIR.mkdir(parents=True, exist_ok=True)
    parquet = BP_DIR / "rows.parquet"
    if not parquet.exists():
        schema = bench_parquet.make_table(0, 1).schema
        with pq.ParquetWriter(parquet.with_suffix(".partial"), schema) as writer:
            for start in range(0, BP_ROWS, bench_parquet.ROW_GROUP):
                writer.write_table(bench_parquet.make_table(start, bench_parquet.ROW_GROUP))
        parquet.with_suffix(".partial").rename(parquet)
    rng = np.random.default_rng(0)
    pool = rng.integers(0, 16, 8 << 20, np.uint8).tobytes()
    for name, (options, n) in BP_FILES.items():
        if (BP_DIR / name).exists():
            continue
        sizes, offsets = rng.integers(6000, 10_000, n), rng.integers(0, (8 << 20) - 10_000, n)
        partial = BP_DIR / (name + ".partial")
        with spelt.experimental.ArrayRecordWriter(str(partial), options) as writer:
            for i in range(n):
                writer.write(i.to_bytes(8, "little") + pool[offsets[i] : offsets[i] + sizes[i]])
        partial.rename(BP_DIR / name)


def run_bp(g: Any) -> dict[str, float]:
    def parquet() -> None:
        for _ in g.experimental.ParquetIterDataset(str(BP_DIR / "rows.parquet")).batch(128):
            pass

    def ranges(name: str) -> Callable[[], None]:
        source = g.sources.ArrayRecordDataSource(str(BP_DIR / name))

        def run() -> None:
            for i in range(0, len(source), 1024):
                source.__getitems__(list(range(i, min(len(source), i + 1024))))

        return run

    def random_batches() -> None:
        source = g.sources.ArrayRecordDataSource(str(BP_DIR / "zstd_g64.array_record"))
        keys = np.random.default_rng(1).permutation(len(source))[: len(source) // 4].tolist()
        for i in range(0, len(keys), 128):
            source.__getitems__(keys[i : i + 128])

    def iterate() -> None:
        source = g.sources.ArrayRecordDataSource(str(BP_DIR / "zstd_g64.array_record"))
        for _ in g.MapDataset.source(source).to_iter_dataset():
            pass

    array = np.random.default_rng(0).integers(0, 256, H3_SHAPE, np.uint8)

    def array_batches() -> None:
        for _ in range(3):
            for _ in g.MapDataset.source(array).seed(0).shuffle().batch(2048):
                pass

    result = {}
    for name, run in (
        ("parquet batches", parquet),
        ("array_record ranges", ranges("zstd_g64.array_record")),
        ("array_record random", random_batches),
        ("array_record iter", iterate),
        ("array_record ranges g1024", ranges("none_g1024.array_record")),
        ("array batches", array_batches),
    ):
        run()  # warm-up
        before = resource.getrusage(resource.RUSAGE_SELF)
        run()
        after = resource.getrusage(resource.RUSAGE_SELF)
        result[f"{name} cpu_s"] = (
            after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        )
        result[f"{name} faults"] = after.ru_minflt - before.ru_minflt
    return result


def child(case: str, rounds: int) -> dict[str, float]:
    import spelt

    runs = {"H1": lambda: run_h1(spelt, rounds), "H2": lambda: run_h2(spelt, rounds)}
    runs["H3"] = lambda: run_h3(spelt)
    runs["BP"] = lambda: run_bp(spelt)
    return runs[case]()


def run_child(python: str, case: str, rounds: int) -> dict[str, float]:
    out = subprocess.run(
        [python, os.path.abspath(__file__), "--child", case, "--rounds", str(rounds)],
        check=True,
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


_GOALS = {
    "H1": ("consumer_cpu_us", "at most 0.5x"),
    "H2": ("workers_outside_map_us", "at most 0.5x"),
    "BP": ("every row", "at most 1x (noise aside)"),
}


def report(case: str, builds: dict[str, list[dict[str, float]]]) -> None:
    keys = list(next(iter(builds.values()))[0])
    print(f"\n{case}: medians over {len(next(iter(builds.values())))} runs each")
    print(f"  {'':32}" + "".join(f"{name:>16}" for name in builds) + "   this / baseline")
    for key in keys:
        medians = {name: statistics.median(r[key] for r in runs) for name, runs in builds.items()}
        row = f"  {key:32}" + "".join(f"{m:16.4g}" for m in medians.values())
        if len(medians) == 2:
            this, base = medians.values()
            row += f"   {this / base:.2f}x" if base else ""
        print(row)
    if case in _GOALS:
        print(f"  goal: {_GOALS[case][0]} {_GOALS[case][1]} of the baseline")
    else:
        print("  goal: each face / gather >= 0.5")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="python of a venv with the earlier build")
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.rounds)))
        return
    rounds = calibrate_rounds()
    pythons = {"this": sys.executable}
    if args.baseline:
        pythons["baseline"] = args.baseline
    print(f"bench_house: load {os.getloadavg()[0]:.1f}, map of {rounds} rounds (~{MAP_US} us)")
    if "BP" in (c for c in CASES if args.k in c):
        write_bp_files()
    for case in (c for c in CASES if args.k in c):
        builds: dict[str, list[dict[str, float]]] = {name: [] for name in pythons}
        for _ in range(args.reps):
            for name, python in pythons.items():
                builds[name].append(run_child(python, case, rounds))
        report(case, builds)
    print(f"\nload at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
