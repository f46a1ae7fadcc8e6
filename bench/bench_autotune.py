"""A1: ``mp_prefetch(..., autotune=True)`` against a small sweep of hand-picked settings.

Run alone with ``.venv/bin/python bench/bench_autotune.py [-k PATTERN] [--reps N]``, or from
``bench/bench.py`` (``make bench``). Three pipelines, each read in a fresh interpreter:

* ``50us``: bench_workers' W1 transform (numpy on a 32x32x3 image, calibrated to ~50 us per
  record), ``to_iter_dataset().batch(64)``;
* ``1ms``: the same transform calibrated to ~1 ms per record, batch 16;
* ``1MiB``: records of 1 MiB float32 (``np.full``), batch 32;
* ``io 2ms`` (beyond the goal's three): a transform that sleeps 2 ms (a remote read), batch 16:
  more workers than CPUs pay, which the tuner has to find out while running.

The hand-picked sweep is ``mp_prefetch(MultiprocessingOptions(num_workers=W,
per_worker_buffer_size=B))`` for W in SWEEP_WORKERS and B in SWEEP_BUFFERS; the tuned pipeline
``mp_prefetch(MultiprocessingOptions(num_workers=max(SWEEP_WORKERS)), autotune=True,
ram_budget_mb=RAM_BUDGET_MB)``. Each case takes about a minute on an idle 2-CPU machine:

1. screening: every sweep point once, on the first SCREEN_SHARE of the records;
2. the FINALISTS fastest sweep points and the tuned pipeline, ``--reps`` repetitions of each,
   interleaved, on all the records (runs of ~3 s at the best setting on the idle machine, so
   that the tuner's first second weighs little, as in a real job that runs for hours);
3. one more tuned run with memory sampling (sampling slows the pipeline).

Reported per case: median records/s after the first batch (wall) and per CPU second of the
whole process tree, the settings the tuner ended with, the ratio of the tuned median to the
best finalist's median (goal >= 0.9) and the same ratio over the second half of the records
only (the steady state, without the tuner's start: the workers it adds after the first chunk
start inside the timed part, where the hand-picked ones started before the first batch), the
load average while the case ran, and the peak over 20 ms samples of the PSS summed over the
consumer and its workers less the consumer's PSS before ``iter()`` (the memory the parallel
stage added), against the budget (goal: within), with the tuner's own peak measure of its pool
beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import bench_workers
import numpy as np

SWEEP_WORKERS = (1, 2, 4)
SWEEP_BUFFERS = (1, 4)
RAM_BUDGET_MB = 512
GOAL = 0.9
CASES = {  # name: (records, batch, transform us per record; None: 1 MiB records or a sleep)
    "50us": (64 * 1600, 64, 50),
    "1ms": (16 * 360, 16, 1000),
    "1MiB": (32 * 420, 32, None),
    "io 2ms": (16 * 375, 16, None),
}
SCREEN_SHARE = 0.5
FINALISTS = 2


def build(case: str, records: int, rounds: int, workers: int, buffer: int, autotune: bool) -> Any:
    import spelt  # pylint: disable=import-outside-toplevel

    batch = CASES[case][1]
    if case == "1MiB":
        ds = spelt.MapDataset.range(records).map(bench_workers.make_large)
    elif case == "io 2ms":
        ds = spelt.MapDataset.range(records).map(sleep_2ms)
    else:
        ds = spelt.MapDataset.source(bench_workers.ImageSource(records)).map(
            bench_workers.Augment(rounds)
        )
    options = spelt.MultiprocessingOptions(num_workers=workers, per_worker_buffer_size=buffer)
    tuned = {"autotune": True, "ram_budget_mb": RAM_BUDGET_MB} if autotune else {}
    return ds.to_iter_dataset().batch(batch).mp_prefetch(options, **tuned)


def sleep_2ms(index: int) -> int:
    time.sleep(0.002)
    return index


def _tuned_keeper(ds: Any) -> Any:
    import spelt  # pylint: disable=import-outside-toplevel

    while not isinstance(ds, spelt.dataset.ProcessPrefetchIterDataset):
        (ds,) = ds.parents
    return ds._keeper  # pylint: disable=protected-access


def child(spec: dict[str, Any]) -> dict[str, Any]:
    import proc_stats  # pylint: disable=import-outside-toplevel

    case, autotune = spec["case"], spec["autotune"]
    ds = build(case, spec["records"], spec["rounds"], spec["workers"], spec["buffer"], autotune)
    memory = None
    if spec["memory"]:
        base = bench_workers._kib("/proc/self/smaps_rollup", "Pss:") << 10  # pylint: disable=protected-access
        memory = bench_workers.MemorySampler()
    it = iter(ds)
    records = len(next(it))
    first, cpu_first = time.perf_counter(), proc_stats.cpu_seconds(os.getpid())
    half, half_records = None, spec["records"] // 2
    for batch in it:
        records += len(batch)
        if half is None and records >= half_records:
            half, half_records = time.perf_counter(), records
    end, cpu_end = time.perf_counter(), proc_stats.cpu_seconds(os.getpid())
    assert records == spec["records"], records
    counted = records - CASES[case][1]
    out = {
        "rate": counted / (end - first),
        "cpu_rate": counted / max(cpu_end - cpu_first, 1e-9),
        "late_rate": (records - half_records) / (end - half),
    }
    if autotune:
        keeper = _tuned_keeper(ds)
        last = keeper.history[-1]
        out.update(
            workers=last.workers,
            buffer=last.buffer_size,
            decisions=len(keeper.history) - 1,
            tuner_peak=keeper.tuner.peak_memory_bytes,
        )
    if memory is not None:
        memory.sample()
        memory.stop()
        out["added_pss"] = memory.peak_pss - base
    return out


Config = tuple[int, int, bool]  # workers (the most, if tuned), buffer, tuned


def _label(config: Config) -> str:
    workers, buffer, autotune = config
    return f"autotune (<= {workers} workers)" if autotune else f"{workers} workers, buffer {buffer}"


def _median(results: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in results)


def _report(
    case: str, results: dict[Config, list[dict[str, Any]]], memory: dict, loads: list[float]
) -> float:
    """Prints the case's table; returns the tuned / best wall ratio."""
    tuned_config = next(c for c in results if c[2])
    hand = {c: r for c, r in results.items() if not c[2]}
    print(f"\nA1 {case}: records/s (min-max), records per CPU second")
    for config, rs in results.items():
        rates = [r["rate"] for r in rs]
        line = (
            f"  {_label(config):<28} {statistics.median(rates):>9,.0f}"
            f" ({min(rates):,.0f}-{max(rates):,.0f})  {_median(rs, 'cpu_rate'):>9,.0f}/CPU-s"
        )
        if config[2]:
            ends = ", ".join(f"{r['workers']}w/b{r['buffer']}" for r in rs)
            line += f"  ended at: {ends}; decisions {_median(rs, 'decisions'):.0f}"
        print(line)
    best = max(hand, key=lambda c: _median(hand[c], "rate"))
    tuned = results[tuned_config]
    ratio = _median(tuned, "rate") / _median(hand[best], "rate")
    cpu_ratio = _median(tuned, "cpu_rate") / _median(hand[best], "cpu_rate")
    late_ratio = _median(tuned, "late_rate") / _median(hand[best], "late_rate")
    print(
        f"  autotune / best hand-picked ({_label(best)}): {ratio:.2f}x wall, {cpu_ratio:.2f}x"
        f" per CPU second (goal >= {GOAL:g}x: {'met' if ratio >= GOAL else 'NOT met'});"
        f" second half of the records only: {late_ratio:.2f}x wall;"
        f" load average {statistics.median(loads):.2f} ({min(loads):.2f}-{max(loads):.2f})"
    )
    added, pool = memory["added_pss"] / 2**20, memory["tuner_peak"] / 2**20
    print(
        f"  autotune peak PSS added (consumer + workers): {added:,.0f} MiB; tuner's pool"
        f" measure {pool:,.0f} MiB; budget {RAM_BUDGET_MB} MiB"
        f" ({'within' if added <= RAM_BUDGET_MB else 'OVER'})"
    )
    return ratio


def _run(
    case: str, rounds: int, config: Config, records: int, loads: list[float], memory: bool = False
) -> dict[str, Any]:
    loads.append(os.getloadavg()[0])
    spec = {
        "case": case,
        "records": records,
        "rounds": rounds,
        "workers": config[0],
        "buffer": config[1],
        "autotune": config[2],
        "memory": memory,
    }
    return bench_workers.run_child(spec, os.path.abspath(__file__))


def measure(case: str, rounds: int, reps: int) -> float:
    """Screens the sweep, then runs the finalists and the tuned pipeline interleaved (see
    module doc); prints the case's table and returns the tuned / best wall ratio."""
    records, loads = CASES[case][0], []
    sweep = [(w, b, False) for w in SWEEP_WORKERS for b in SWEEP_BUFFERS]
    screen_records = int(records * SCREEN_SHARE) // CASES[case][1] * CASES[case][1]
    screened = {c: _run(case, rounds, c, screen_records, loads)["rate"] for c in sweep}
    finalists = sorted(sweep, key=screened.get, reverse=True)[:FINALISTS]
    print(
        f"\nA1 {case} screening ({screen_records} records, records/s): "
        + ", ".join(f"{_label(c)} {screened[c]:,.0f}" for c in sweep)
    )
    configs = [*finalists, (max(SWEEP_WORKERS), 1, True)]
    results: dict[Config, list[dict[str, Any]]] = {c: [] for c in configs}
    for _ in range(reps):
        for config in configs:
            results[config].append(_run(case, rounds, config, records, loads))
    memory = _run(case, rounds, configs[-1], records, loads, memory=True)
    return _report(case, results, memory, loads)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the finalists")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    cases = [c for c in CASES if args.k in f"A1 {c}" or args.k in "autotune"]
    if not cases:
        return
    rounds = {us: bench_workers.calibrate_rounds(us) for *_, us in CASES.values() if us}
    print(
        f"A1 autotune: {len(os.sched_getaffinity(0))} usable CPUs; transforms {rounds}"
        f" (us: rounds); {args.reps} repetitions of {FINALISTS} finalists and autotune, fresh"
        " process each"
    )
    for case in cases:
        start = time.perf_counter()
        measure(case, rounds.get(CASES[case][2], 0), args.reps)
        print(f"  ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
