"""Spelt on Ray actors (spelt.experimental.RayOptions): D1, D2 and the per-chunk overhead.

Run alone with ``.venv/bin/python bench/bench_ray.py [-k PATTERN] [--reps N]``, or from
bench/bench.py (``make bench``, which installs Ray). One local Ray cluster of 2 CPUs is started
for the whole run and stopped at the end. Cases:

* D1 ``actors vs workers``: a Python transform of about 1 ms per record (a calibrated pure-Python
  loop, then a 1 KiB float32 record), ``MapDataset.range(N).shuffle().map(...)
  .to_iter_dataset().batch(32)``, read by Spelt with 2 Ray actors and with 2 local worker
  processes (``mp_prefetch``); records/s after the first batch. Goal: Ray >= 0.8x workers.
* D2 ``ray data``: the same transform and batch, end to end (build to last batch), Spelt on 2
  Ray actors against Ray Data written the usual way (``ray.data.range(N).random_shuffle(seed)
  .map_batches(fn, batch_size=32).iter_batches(batch_size=32)``). Goal: Spelt >= 2x Ray Data.
  Then a determinism check: two runs of each; Spelt's batches must be identical, Ray Data's
  order is reported (it is not deterministic by default).
* ``overhead``: the per-chunk cost of the Ray executor, measured on one actor with one chunk in
  flight: round-trip latency of chunks of 1 element, consumer CPU per chunk, and the seconds per
  MiB of chunks of 1 MiB of elements (the object store's path); the model of docs/distributed.md.

Both Spelt configurations keep their executors warm between repetitions (named actors; the
worker pool of a kept dataset), as a training job's later epochs do; Ray Data's tasks run on
Ray's pooled worker processes, warm after the warm-up repetition. Repetitions of the
configurations are interleaved; medians (min-max) and ratios of the medians are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import cloudpickle
import numpy as np

import spelt

D_RECORDS = 2000
D_BATCH = 32
RECORD_FLOATS = 256  # 1 KiB
TARGET_TRANSFORM_S = 1e-3
D1_GOAL, D2_GOAL = 0.8, 2.0
ACTORS = "bench-ray"
OVERHEAD_CHUNKS = 200
MIB_ELEMENTS = 16  # 16 x 64 KiB = 1 MiB per chunk
MIB_CHUNKS = 40


def _burn(rounds: int) -> int:
    total = 0
    for k in range(rounds):
        total += k * k
    return total


def calibrate() -> int:
    """Rounds of _burn taking about TARGET_TRANSFORM_S (the best of a few tries)."""
    rounds = 10_000
    best = min(_timed(lambda: _burn(rounds)) for _ in range(20))
    return max(1, int(rounds * TARGET_TRANSFORM_S / best))


def _timed(f: Callable[[], Any]) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


class Transform:
    """About 1 ms of Python per record, then a 1 KiB record {"id", "x"}."""

    def __init__(self, rounds: int):
        self.rounds = rounds

    def __call__(self, i):
        _burn(self.rounds)
        return {"id": i, "x": np.full(RECORD_FLOATS, i, np.float32)}

    def batch(self, batch: dict) -> dict:
        """Ray Data's map_batches function: the transform per record of a batch."""
        records = [self(int(i)) for i in batch["id"]]
        return {k: np.stack([r[k] for r in records]) for k in ("id", "x")}


def spelt_dataset(rounds: int, backend: Any) -> Any:
    ds = (
        spelt.MapDataset.range(D_RECORDS)
        .seed(0)
        .shuffle()
        .map(Transform(rounds))
        .to_iter_dataset()
        .batch(D_BATCH)
    )
    return ds.mp_prefetch(backend)


def ray_data_batches(rounds: int) -> Any:
    import ray  # pylint: disable=import-outside-toplevel

    ds = ray.data.range(D_RECORDS).random_shuffle(seed=0)
    ds = ds.map_batches(Transform(rounds).batch, batch_size=D_BATCH, batch_format="numpy")
    return ds.iter_batches(batch_size=D_BATCH, batch_format="numpy")


def after_first(batches: Any) -> float:
    """Records/s of `batches` after the first batch."""
    it = iter(batches)
    next(it)
    start, records = time.perf_counter(), 0
    for batch in it:
        records += len(batch["id"])
    return records / (time.perf_counter() - start)


def end_to_end(make: Callable[[], Any]) -> float:
    """Records/s from building the pipeline to its last batch."""
    start, records = time.perf_counter(), 0
    for batch in make():
        records += len(batch["id"])
    return records / (time.perf_counter() - start)


def measure(configs: dict[str, Callable[[], float]], reps: int) -> dict[str, list[float]]:
    """Interleaved repetitions after one warm-up each."""
    for run in configs.values():
        run()
    results: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(reps):
        for name, run in configs.items():
            results[name].append(run())
    return results


def _row(name: str, values: list[float]) -> str:
    return f"| {name} | {statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f}) |"


def report(title: str, results: dict[str, list[float]], ratio: tuple[str, str], goal: float):
    print(f"\n{title} (records/s, median (min-max) of {len(next(iter(results.values())))})")
    print("| configuration | records/s |\n| --- | ---: |")
    for name, values in results.items():
        print(_row(name, values))
    value = statistics.median(results[ratio[0]]) / statistics.median(results[ratio[1]])
    verdict = "met" if value >= goal else "NOT met"
    print(f"{ratio[0]} / {ratio[1]}: {value:.2f}x (goal >= {goal:g}x: {verdict})")


def d1(rounds: int, reps: int) -> None:
    on_ray = spelt_dataset(rounds, spelt.experimental.RayOptions(num_actors=2, actor_name=ACTORS))
    on_workers = spelt_dataset(rounds, spelt.MultiprocessingOptions(num_workers=2))
    results = measure(
        {
            "Spelt, 2 Ray actors": lambda: after_first(on_ray),
            "Spelt, 2 worker processes": lambda: after_first(on_workers),
        },
        reps,
    )
    report(
        "D1: ~1 ms/record Python transform, batch 32, after the first batch",
        results,
        ("Spelt, 2 Ray actors", "Spelt, 2 worker processes"),
        D1_GOAL,
    )


def _ids(batches: Any) -> list[int]:
    return [int(i) for batch in batches for i in batch["id"]]


def d2(rounds: int, reps: int) -> None:
    on_ray = spelt_dataset(rounds, spelt.experimental.RayOptions(num_actors=2, actor_name=ACTORS))
    results = measure(
        {
            "Spelt, 2 Ray actors": lambda: end_to_end(lambda: on_ray),
            "Ray Data": lambda: end_to_end(lambda: ray_data_batches(rounds)),
        },
        reps,
    )
    report(
        "D2: same transform and batch, end to end",
        results,
        ("Spelt, 2 Ray actors", "Ray Data"),
        D2_GOAL,
    )
    spelt_runs = [list(on_ray) for _ in range(2)]
    identical = len(spelt_runs[0]) == len(spelt_runs[1]) and all(
        np.array_equal(a["id"], b["id"]) and np.array_equal(a["x"], b["x"])
        for a, b in zip(*spelt_runs)
    )
    ray_runs = [_ids(ray_data_batches(rounds)) for _ in range(2)]
    print(
        f"determinism: Spelt's two runs {'identical' if identical else 'DIFFER'};"
        f" Ray Data's two runs {'same' if ray_runs[0] == ray_runs[1] else 'different'} order"
        f" ({sum(a != b for a, b in zip(*ray_runs))} of {len(ray_runs[0])} positions differ),"
        f" same records: {sorted(ray_runs[0]) == sorted(ray_runs[1]) == list(range(D_RECORDS))}"
    )
    if not identical:
        raise AssertionError("Spelt on Ray is not deterministic")


def _sized(nbytes: int) -> Callable[[int], np.ndarray]:
    return lambda i: np.full(nbytes, i % 251, np.uint8)


def _chunks(lease: Any, count: int, chunks: int) -> tuple[float, float, float]:
    """(wall seconds, consumer CPU seconds, actor seconds) per chunk, one in flight."""
    wall, cpu, actor = time.perf_counter(), time.process_time(), 0.0
    for k in range(chunks):
        actor += lease.submit(k * count, count).take()[2]
    return (
        (time.perf_counter() - wall) / chunks,
        (time.process_time() - cpu) / chunks,
        actor / chunks,
    )


def overhead() -> None:
    from spelt._workers import ray_pool  # pylint: disable=import-outside-toplevel

    options = spelt.experimental.RayOptions(num_actors=1)
    rows = {}
    for name, nbytes, count, chunks in (
        ("1 element, 8 B", 8, 1, OVERHEAD_CHUNKS),
        ("16 x 64 KiB = 1 MiB", 64 << 10, MIB_ELEMENTS, MIB_CHUNKS),
    ):
        ds = spelt.MapDataset.range(count * (chunks + 3)).map(_sized(nbytes))
        lease = ray_pool.RayKeeper(ds, options).acquire()
        _chunks(lease, count, 3)  # actor started, pipeline loaded
        rows[name] = _chunks(lease, count, chunks)
    print("\nper-chunk overhead (1 actor, one chunk in flight):")
    print("| chunk | round trip | actor compute | overhead | consumer CPU |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (wall, cpu, actor) in rows.items():
        print(
            f"| {name} | {wall * 1e3:.2f} ms | {actor * 1e3:.3f} ms | {(wall - actor) * 1e3:.2f} ms"
            f" | {cpu * 1e3:.2f} ms |"
        )
    (small_wall, _, small_actor), (mib_wall, _, mib_actor) = rows.values()
    per_mib = max((mib_wall - mib_actor) - (small_wall - small_actor), 1e-9)
    print(f"bytes: {per_mib * 1e3:.2f} ms per MiB beyond a small chunk ({1 / per_mib:,.0f} MiB/s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=5, help="measured repetitions")
    args = parser.parse_args(argv)
    cases = {"D1 actors vs workers": d1, "D2 ray data": d2, "overhead": None}
    cases = {name: run for name, run in cases.items() if args.k in name}
    if not cases:  # e.g. a -k meant for another bench module
        return
    import ray  # pylint: disable=import-outside-toplevel

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # actors lack bench/ on sys.path
    ray.init(num_cpus=2, namespace="spelt", include_dashboard=False, log_to_driver=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        rounds = calibrate()
        per_record = _timed(lambda: Transform(rounds)(0))
        print(
            f"Ray executor: Ray {ray.__version__}, {os.cpu_count()} CPUs, load average"
            f" {os.getloadavg()[0]:.2f}; transform {per_record * 1e3:.2f} ms per record;"
            f" {D_RECORDS} records, batch {D_BATCH}"
        )
        for name, run in cases.items():
            if run is None:
                overhead()
            else:
                run(rounds, args.reps)
    finally:
        try:
            spelt.ray.stop_actors(ACTORS, 2)
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
