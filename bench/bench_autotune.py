"""A1: ``mp_prefetch(..., autotune=True)`` against a small sweep of hand-picked settings.

Run alone with ``.venv/bin/python bench/bench_autotune.py [-k PATTERN] [--reps N]``, or from
``bench/bench.py`` (``make bench``). Three pipelines, each read in a fresh interpreter:

* ``50us``: bench_workers' W1 transform (numpy on a 32x32x3 image, calibrated to ~50 us per
  record), ``to_iter_dataset().batch(64)``;
* ``1ms``: the same transform calibrated to ~1 ms per record, batch 16;
* ``1MiB``: records of 1 MiB float32 (``np.full``), batch 32;
* ``io 2ms`` (beyond the goal's three): a transform that sleeps 2 ms (a remote read), batch 16:
  more workers than CPUs pay, which the tuner has to find out while running.

Each is read with ``mp_prefetch(MultiprocessingOptions(num_workers=W,
per_worker_buffer_size=B))`` for W in SWEEP_WORKERS and B in SWEEP_BUFFERS (the hand-picked
sweep), and with ``mp_prefetch(MultiprocessingOptions(num_workers=max(SWEEP_WORKERS)),
autotune=True, ram_budget_mb=RAM_BUDGET_MB)``; configurations are interleaved within each
repetition. Reported: median records/s after the first batch (wall) and per CPU second of the
whole process tree, the settings the tuner ended with, and the ratio of the autotuned median to
the best hand-picked median (goal >= 0.9). In separate repetitions (sampling slows the
pipeline), the peak over 20 ms samples of the PSS summed over the consumer and its workers,
less the consumer's PSS before ``iter()``: the memory the parallel stage added, which must stay
within the budget (goal), with the tuner's own peak measure of its pool beside it.
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
    "50us": (64 * 800, 64, 50),
    "1ms": (16 * 250, 16, 1000),
    "1MiB": (32 * 250, 32, None),
    "io 2ms": (16 * 250, 16, None),
}
MEMORY_REPS = 1


def build(case: str, rounds: int, workers: int, buffer: int, autotune: bool) -> Any:
    import spelt  # pylint: disable=import-outside-toplevel

    records, batch, _ = CASES[case]
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
    ds = build(case, spec["rounds"], spec["workers"], spec["buffer"], autotune)
    memory = None
    if spec["memory"]:
        base = bench_workers._kib("/proc/self/smaps_rollup", "Pss:") << 10  # pylint: disable=protected-access
        memory = bench_workers.MemorySampler()
    it = iter(ds)
    records = len(next(it))
    first, cpu_first = time.perf_counter(), proc_stats.cpu_seconds(os.getpid())
    for batch in it:
        records += len(batch)
    end, cpu_end = time.perf_counter(), proc_stats.cpu_seconds(os.getpid())
    assert records == CASES[case][0], records
    counted = records - CASES[case][1]
    out = {"rate": counted / (end - first), "cpu_rate": counted / max(cpu_end - cpu_first, 1e-9)}
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


def _label(config: tuple[int, int, bool]) -> str:
    workers, buffer, autotune = config
    return f"autotune (<= {workers} workers)" if autotune else f"{workers} workers, buffer {buffer}"


def _median(results: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in results)


def _report(case: str, results: dict[tuple[int, int, bool], list[dict[str, Any]]]) -> None:
    hand = {c: r for c, r in results.items() if not c[2]}
    tuned_config = next(c for c in results if c[2])
    tuned = [r for r in results[tuned_config] if "added_pss" not in r]
    print(f"\nA1 {case}: records/s (min-max), records per CPU second")
    for config, rs in results.items():
        speed = [r for r in rs if "added_pss" not in r]
        rates = [r["rate"] for r in speed]
        line = (
            f"  {_label(config):<28} {statistics.median(rates):>9,.0f}"
            f" ({min(rates):,.0f}-{max(rates):,.0f})  {_median(speed, 'cpu_rate'):>9,.0f}/CPU-s"
        )
        if config[2]:
            ends = ", ".join(f"{r['workers']}w/b{r['buffer']}" for r in speed)
            line += f"  ended at: {ends}; decisions {_median(speed, 'decisions'):.0f}"
        print(line)
    best = max(hand, key=lambda c: _median(hand[c], "rate"))
    ratio = _median(tuned, "rate") / _median(hand[best], "rate")
    cpu_ratio = _median(tuned, "cpu_rate") / _median(hand[best], "cpu_rate")
    print(
        f"  autotune / best hand-picked ({_label(best)}): {ratio:.2f}x wall, {cpu_ratio:.2f}x"
        f" per CPU second (goal >= {GOAL:g}x: {'met' if ratio >= GOAL else 'NOT met'})"
    )
    memory = [r for r in results[tuned_config] if "added_pss" in r]
    if memory:
        added = max(r["added_pss"] for r in memory) / 2**20
        pool = max(r["tuner_peak"] for r in memory) / 2**20
        print(
            f"  autotune peak PSS added (consumer + workers): {added:,.0f} MiB; tuner's pool"
            f" measure {pool:,.0f} MiB; budget {RAM_BUDGET_MB} MiB"
            f" ({'within' if added <= RAM_BUDGET_MB else 'OVER'})"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per configuration")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    cases = [c for c in CASES if args.k in f"A1 {c}" or args.k in "autotune"]
    if not cases:
        return
    rounds = {us: bench_workers.calibrate_rounds(us) for *_, us in CASES.values() if us}
    configs = [(w, b, False) for w in SWEEP_WORKERS for b in SWEEP_BUFFERS]
    configs.append((max(SWEEP_WORKERS), 1, True))
    print(
        f"A1 autotune: {os.cpu_count()} CPUs; transforms {rounds} (us: rounds); {args.reps}"
        " repetitions, fresh process each"
    )
    loads = []
    for case in cases:
        us = CASES[case][2]
        results: dict[tuple[int, int, bool], list[dict[str, Any]]] = {c: [] for c in configs}
        for rep in range(args.reps + MEMORY_REPS):
            for config in configs:
                memory = rep >= args.reps
                if memory and not config[2]:
                    continue
                loads.append(os.getloadavg()[0])
                spec = {
                    "case": case,
                    "rounds": rounds.get(us, 0),
                    "workers": config[0],
                    "buffer": config[1],
                    "autotune": config[2],
                    "memory": memory,
                }
                results[config].append(bench_workers.run_child(spec, os.path.abspath(__file__)))
        _report(case, results)
    print(
        f"\nload average during the runs: median {statistics.median(loads):.2f}"
        f" ({min(loads):.2f}-{max(loads):.2f})"
    )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
