"""Worker processes, Spelt vs Grain (PyPI ``grain`` 0.2.18): throughput, first batch, memory.

Run alone with ``.venv/bin/python bench/bench_workers.py [-k PATTERN] [--reps N]``, or from
another script with ``bench_workers.main([...])`` (``make bench`` does). The same code builds
each pipeline on both engines (Spelt is call-compatible). Cases:

* W1 ``transform``: a Python transform of about 50 us per record (numpy arithmetic on a
  32x32x3 image, calibrated on this machine), ``to_iter_dataset().batch(64)``, read with
  ``mp_prefetch(MultiprocessingOptions(num_workers=2))`` by both engines, and by Spelt with 0
  workers. Records/s in steady state (see below). Goals: Spelt 2 workers >= 1.5x Spelt 0 workers
  (on 2 cores), >= 5x Grain 2 workers.
* W2 ``large``: records of 1 MiB float32 (``np.full``), batch 32, 2 workers. MiB/s in steady
  state, against ``memcpy``: one process copying 1 MiB arrays (from a 256 MiB pool, so
  not from cache) into fresh 32 MiB batches, the least a consumer that batches must do.
  Goals: Spelt >= 5x Grain and >= 0.3x memcpy.
* W3 ``first batch``: a DataLoader (IndexSampler, W1's transform as a ``transforms.Map``,
  ``Batch(64)``, ``worker_count=4``): seconds from building it to its first batch, and from
  ``iter()`` to the first batch of a second iterator of the same loader. Goals: Spelt's first
  <= 0.5x Grain's; Spelt's second <= 0.2 s.

W1's and W2's rates are steady-state: from the 10th batch to the 10th before the end
(``STEADY_SKIP``); the seconds from ``iter()`` to the first batch (start-up: worker processes
start, and Spelt's large batches hand over from batches made by the workers to batching in the
consumer, docs/workers.md) are reported apart. W1 and W2 also report the peak memory of the consumer plus all its descendant processes: the
peak over samples (every 20 ms) of the summed PSS (shared pages split between the processes
that map them, so an arena or a /dev/shm segment counts once) and of the summed RSS (which
counts shared pages once per process). Memory is measured in separate repetitions (the first
MEMORY_REPS), because reading every process's smaps_rollup 50 times a second costs the
pipeline itself ~30% of W2's throughput (it walks the page tables of the processes measured).

Every repetition runs in a fresh interpreter that imports only the engine it measures;
repetitions of the engines are interleaved so that drift of the machine hits all of them. The
table gives medians (min-max) and the ratios of the medians. Before measuring, the bench checks
that Spelt with 2 workers yields the batches of Spelt with 0 workers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np

IMAGE_SHAPE = (32, 32, 3)
TRANSFORM_US = 50
TRANSFORM_RECORDS = 64 * 300
STEADY_SKIP = 10  # batches left out of the rates at each end (start-up, and the pipeline's end)
TRANSFORM_BATCH = 64
LARGE_FLOATS = (1 << 20) // 4
LARGE_RECORDS = 32 * 80
LARGE_BATCH = 32
FIRST_BATCH_WORKERS = 4
SAMPLE_SECONDS = 0.02
MEMORY_REPS = 2


# ---------------------------------------------------------------------------------------------
# Pipelines (the same code on both engines).


class ImageSource:
    """4,096 random uint8 images of 32x32x3, indexed modulo their count; stable repr."""

    def __init__(self, num_records: int):
        self._images = np.random.default_rng(0).integers(0, 256, (4096, *IMAGE_SHAPE), np.uint8)
        self._num_records = num_records

    def __len__(self) -> int:
        return self._num_records

    def __getitem__(self, index: int) -> np.ndarray:
        return self._images[index % len(self._images)]

    def __repr__(self) -> str:
        return f"ImageSource({self._num_records})"


class Augment:
    """float32 conversion, then `rounds` rounds of elementwise arithmetic (~2 us each)."""

    def __init__(self, rounds: int):
        self.rounds = rounds

    def __call__(self, image: np.ndarray) -> np.ndarray:
        x = image.astype(np.float32) * (1 / 255)
        for _ in range(self.rounds):
            x = np.tanh(x * 1.5 - 0.25)
        return x


def calibrate_rounds(target_us: float = TRANSFORM_US) -> int:
    """Rounds of Augment that take about target_us on this machine."""
    image = ImageSource(1)[0]
    rounds = 10
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(500):
            Augment(rounds)(image)
        per_call_us = (time.perf_counter() - start) / 500 * 1e6
        rounds = max(1, round(rounds * target_us / per_call_us))
    return rounds


def make_large(index: int) -> np.ndarray:
    return np.full(LARGE_FLOATS, index, dtype=np.float32)


def build(g: Any, case: str, workers: int, rounds: int) -> Any:
    if case == "large":
        ds = g.MapDataset.range(LARGE_RECORDS).map(make_large).to_iter_dataset().batch(LARGE_BATCH)
    else:
        ds = (
            g.MapDataset.source(ImageSource(TRANSFORM_RECORDS))
            .map(Augment(rounds))
            .to_iter_dataset()
            .batch(TRANSFORM_BATCH)
        )
    if workers:
        ds = ds.mp_prefetch(g.MultiprocessingOptions(num_workers=workers))
    return ds


def build_loader(g: Any, workers: int, rounds: int) -> Any:
    augment = Augment(rounds)

    class AugmentOp(g.transforms.Map):  # pickled by value (cloudpickle) by both engines
        def map(self, element):
            return augment(element)

    return g.DataLoader(
        data_source=ImageSource(TRANSFORM_RECORDS),
        sampler=g.samplers.IndexSampler(
            TRANSFORM_RECORDS, shuffle=False, num_epochs=1, shard_options=g.sharding.NoSharding()
        ),
        operations=[AugmentOp(), g.transforms.Batch(TRANSFORM_BATCH)],
        worker_count=workers,
    )


# ---------------------------------------------------------------------------------------------
# Memory of a process tree.


def _descendants(root: int) -> list[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        tree += frontier
    return tree


def _kib(path: str, field: str) -> int:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class MemorySampler:
    """Peak summed PSS and RSS (bytes) of this process and its descendants, sampled."""

    def __init__(self):
        self.peak_pss = self.peak_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.sample()

    def sample(self) -> None:
        pids = _descendants(os.getpid())
        pss = sum(_kib(f"/proc/{p}/smaps_rollup", "Pss:") for p in pids) << 10
        rss = sum(_kib(f"/proc/{p}/status", "VmRSS:") for p in pids) << 10
        self.peak_pss, self.peak_rss = max(self.peak_pss, pss), max(self.peak_rss, rss)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------------------------------------
# One repetition, in a fresh interpreter.


def memcpy_rate() -> float:
    """MiB/s of copying 1 MiB arrays into fresh 32 MiB batches (see module doc)."""
    pool = np.ones((256, LARGE_FLOATS), np.float32)
    start = time.perf_counter()
    for b in range(LARGE_RECORDS // LARGE_BATCH):
        batch = np.empty((LARGE_BATCH, LARGE_FLOATS), np.float32)
        for i in range(LARGE_BATCH):
            batch[i] = pool[(b * LARGE_BATCH + i) % len(pool)]
    return LARGE_RECORDS / (time.perf_counter() - start)


def first_batches(g: Any, workers: int, rounds: int) -> dict[str, float]:
    start = time.perf_counter()
    loader = build_loader(g, workers, rounds)
    it = iter(loader)
    next(it)
    first = time.perf_counter() - start
    del it
    start = time.perf_counter()
    next(iter(loader))
    return {"first": first, "second": time.perf_counter() - start}


def child(spec: dict[str, Any]) -> dict[str, Any]:
    case, workers, rounds = spec["case"], spec["workers"], spec["rounds"]
    if spec["engine"] == "memcpy":
        return {"rate": memcpy_rate()}
    if spec["engine"] == "grain":
        logging.getLogger("absl").setLevel(logging.ERROR)
        import grain as g  # pylint: disable=import-outside-toplevel
        from absl import flags  # pylint: disable=import-outside-toplevel

        # With jax installed, Grain's mp_prefetch reads its absl flags: outside absl.app.run
        # they must be parsed first (UnparsedFlagAccessError otherwise).
        flags.FLAGS.mark_as_parsed()
    else:
        import spelt as g  # pylint: disable=import-outside-toplevel
    if case == "check":
        for name in ("transform", "large"):
            want = list(build(g, name, 0, rounds))[:4]
            got = list(build(g, name, 2, rounds))[:4]
            assert len(got) == 4 and all(np.array_equal(a, b) for a, b in zip(got, want)), name
        return {}
    if case == "first batch":
        return first_batches(g, workers, rounds)
    memory = MemorySampler() if spec.get("memory") else None
    start = time.perf_counter()
    ends = []  # when each batch came
    records = 0
    for batch in build(g, case, workers, rounds):
        ends.append(time.perf_counter())
        records += len(batch)
    batch_size = LARGE_BATCH if case == "large" else TRANSFORM_BATCH
    expected = LARGE_RECORDS if case == "large" else TRANSFORM_RECORDS
    assert records == expected, f"{records} records, not {expected}"
    if memory is None:
        # Steady state: from the STEADY_SKIP-th batch to the STEADY_SKIP-th before the end.
        first, last = ends[STEADY_SKIP - 1], ends[-STEADY_SKIP - 1]
        steady = (len(ends) - 2 * STEADY_SKIP) * batch_size
        return {"rate": steady / (last - first), "start": ends[0] - start}
    memory.sample()
    memory.stop()
    return {"pss": memory.peak_pss, "rss": memory.peak_rss}


def run_child(spec: dict[str, Any], script: str = os.path.abspath(__file__)) -> dict[str, Any]:
    """The JSON result of ``script --child SPEC`` run in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, script, "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{spec}: child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# The table.


@dataclasses.dataclass(frozen=True)
class Config:
    name: str  # W1, W2, W3
    case: str
    engine: str
    workers: int
    memory: bool = False  # measures peak memory instead of speed

    @property
    def label(self) -> str:
        return self.engine if self.engine == "memcpy" else f"{self.engine} {self.workers}w"


CONFIGS = [
    Config("W1", "transform", "spelt", 2),
    Config("W1", "transform", "grain", 2),
    Config("W1", "transform", "spelt", 0),
    Config("W2", "large", "spelt", 2),
    Config("W2", "large", "grain", 2),
    Config("W2", "large", "memcpy", 0),
    Config("W3", "first batch", "spelt", FIRST_BATCH_WORKERS),
    Config("W3", "first batch", "grain", FIRST_BATCH_WORKERS),
]
MEMORY_CONFIGS = [
    dataclasses.replace(c, memory=True)
    for c in CONFIGS
    if c.case in ("transform", "large") and c.workers
]


@dataclasses.dataclass(frozen=True)
class Goal:
    """numerator / denominator of the medians of `key` >= ratio; or, without a denominator,
    the numerator's median <= ratio (an absolute bound, in the key's unit)."""

    what: str
    numerator: Config
    denominator: Config | None
    key: str
    ratio: float


GOALS = [
    Goal("W1 Spelt 2w / Spelt 0w records/s", CONFIGS[0], CONFIGS[2], "rate", 1.5),
    Goal("W1 Spelt 2w / Grain 2w records/s", CONFIGS[0], CONFIGS[1], "rate", 5.0),
    Goal("W2 Spelt / Grain MiB/s", CONFIGS[3], CONFIGS[4], "rate", 5.0),
    Goal("W2 Spelt / memcpy MiB/s", CONFIGS[3], CONFIGS[5], "rate", 0.3),
    Goal("W1 Grain / Spelt peak PSS", MEMORY_CONFIGS[1], MEMORY_CONFIGS[0], "pss", 1.0),
    Goal("W2 Grain / Spelt peak PSS", MEMORY_CONFIGS[3], MEMORY_CONFIGS[2], "pss", 1.0),
    Goal("W3 Grain / Spelt first batch, s", CONFIGS[7], CONFIGS[6], "first", 2.0),
    Goal("W3 Spelt second iterator's first batch, s", CONFIGS[6], None, "second", 0.2),
]


def _median(results: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in results)


def _spread(results: list[dict[str, Any]], key: str, scale: float, fmt: str) -> str:
    """Median (min-max) of results[key] * scale."""
    values = [r[key] * scale for r in results]
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def _rows(config: Config, results: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(measure, value) rows of one configuration."""
    if config.case == "first batch":
        return [
            ("s, 1st iterator", _spread(results, "first", 1, ".3f")),
            ("s, 2nd iterator", _spread(results, "second", 1, ".3f")),
        ]
    if config.memory:
        return [
            ("peak PSS MiB", _spread(results, "pss", 2**-20, ",.0f")),
            ("peak RSS MiB", _spread(results, "rss", 2**-20, ",.0f")),
        ]
    unit = "MiB/s" if config.case == "large" else "records/s"  # a large record is 1 MiB
    rows = [(unit, _spread(results, "rate", 1, ",.0f"))]
    if "start" in results[0]:
        rows.append(("s to 1st batch", _spread(results, "start", 1, ".3f")))
    return rows


def report(results: dict[Config, list[dict[str, Any]]], loads: list[float]) -> None:
    rows = [
        (config.name, config.label, *row)
        for config, rs in results.items()
        for row in _rows(config, rs)
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(f"{v:<{w}}" for v, w in zip(row, widths)))
    print(
        f"\nload average during the runs: median {statistics.median(loads):.2f}"
        f" ({min(loads):.2f}-{max(loads):.2f})\n"
    )
    for goal in GOALS:
        if goal.numerator not in results or (goal.denominator and goal.denominator not in results):
            continue
        value = _median(results[goal.numerator], goal.key)
        if goal.denominator is None:
            met = value <= goal.ratio
            print(
                f"{goal.what}: {value:.3f} (goal <= {goal.ratio:g}: {'met' if met else 'NOT met'})"
            )
            continue
        value /= _median(results[goal.denominator], goal.key)
        met = value >= goal.ratio
        print(f"{goal.what}: {value:.2f}x (goal >= {goal.ratio:g}x: {'met' if met else 'NOT met'})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the cases whose name or case contains this")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per configuration")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    configs = [c for c in CONFIGS + MEMORY_CONFIGS if args.k in c.case or args.k in c.name]
    if not configs:  # e.g. a -k meant for another bench module
        return
    rounds = calibrate_rounds()
    per_call_us = _time_augment(rounds)
    print(
        f"Worker processes: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f};"
        f" transform: {rounds} rounds = {per_call_us:.0f} us per record; {args.reps}"
        " repetitions, fresh process each"
    )
    run_child({"engine": "spelt", "case": "check", "workers": 0, "rounds": rounds})
    print("Spelt with 2 workers yields the batches of Spelt with 0 workers\n")
    results: dict[Config, list[dict[str, Any]]] = {c: [] for c in configs}
    loads = []
    for rep in range(args.reps):
        for config in configs:
            if config.memory and rep >= MEMORY_REPS:
                continue
            loads.append(os.getloadavg()[0])
            results[config].append(
                run_child(
                    {
                        "engine": config.engine,
                        "case": config.case,
                        "workers": config.workers,
                        "rounds": rounds,
                        "memory": config.memory,
                    }
                )
            )
    report(results, loads)


def _time_augment(rounds: int) -> float:
    image, augment = ImageSource(1)[0], Augment(rounds)
    start = time.perf_counter()
    for _ in range(2000):
        augment(image)
    return (time.perf_counter() - start) / 2000 * 1e6


if __name__ == "__main__":
    main()
