"""The cost of elastic resume with VirtualShardIterDataset (docs/multihost.md, Resuming on
another host count): ``.venv/bin/python bench/bench_virtual_shards.py``.

- V1, throughput: 2 hosts simulated in this process (``ShardOptions(h, 2)``, read one after
  the other), each reading its whole stream in batches of 32. Elastic: the pipeline built on
  each of K virtual shards (``ds[v::K]``), batched there, and the host's shards read round
  robin; plain: the same pipeline on the host's shard ``ds[h::2]``, batched. Each run is timed
  in two parts, start-up (making the host's dataset and iterator and reading its first batch:
  the shards' pipelines are built then) and steady state (the rest, about half a second per host), over
  both hosts. Medians of REPS runs (plain and elastic alternating, after a warm-up of each), and
  the medians of the runs' ratios elastic / plain as throughputs (each elastic run against the
  plain run just before it; below 1: elastic is slower), steady state, start-up and whole run,
  and of steady state in CPU seconds (all of this process's threads: read-ahead included; less
  noisy than wall time on a shared machine).
- V2, checkpoint size: bytes of the per-process checkpoint files (the states as JSON, indent 4,
  as ``spelt.checkpoint`` writes them) of 2 hosts, half-way through, against K.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from typing import Any, Callable

import numpy as np

import spelt
import spelt.experimental

REPS = 9
BATCH = 32


def _tokens(r):
    return {"tokens": np.arange(r % 9 + 1, dtype=np.int32)}


def _range(start, stop, s):
    return spelt.MapDataset.range(start, stop)[s.shard_index :: s.shard_count]


# name: (records n, make(shard options, n)); n sets each host's steady state to about 0.5 s.
PIPELINES: dict[str, tuple[int, Callable[[Any, int], Any]]] = {
    # No Python per element: the worst case for the round robin's own cost.
    "engine_only": (4_000_000, lambda s, n: _range(0, n, s).to_iter_dataset()),
    "filter": (
        1_000_000,
        lambda s, n: _range(0, n, s).to_iter_dataset().filter(lambda x: x % 7 != 3),
    ),
    "mix": (
        1_000_000,
        lambda s, n: spelt.IterDataset.mix(
            [
                _range(0, n, s).to_iter_dataset(),
                _range(n, 2 * n, s).to_iter_dataset().filter(lambda x: x % 5 != 0),
            ],
            [0.7, 0.3],
        ),
    ),
    "first_fit": (
        40_000,
        lambda s, n: spelt.experimental.FirstFitPackIterDataset(
            _range(0, n, s).map(_tokens).to_iter_dataset(),
            length_struct={"tokens": 32},
            num_packing_bins=4,
        ),
    ),
}


def _elastic(name, k, h, n=None):
    size, make = PIPELINES[name]
    n = size if n is None else n
    return spelt.experimental.VirtualShardIterDataset(
        lambda s: make(s, n), k, spelt.sharding.ShardOptions(h, 2), batch_size=BATCH
    )


def _plain(name, h):
    n, make = PIPELINES[name]
    return make(spelt.sharding.ShardOptions(h, 2), n).batch(BATCH)


def _size(batch) -> int:
    return len(next(iter(batch.values()))) if isinstance(batch, dict) else len(batch)


def _run(makers) -> tuple[float, float, int, float]:
    """(start-up seconds, steady-state seconds, elements after the first batches, steady-state
    CPU seconds of this process's threads) over the hosts' datasets (``makers``: a function
    making each), read one after the other."""
    start_up = steady = cpu = 0.0
    count = 0
    for make in makers:
        t0 = time.perf_counter()
        it = iter(make())
        next(it)
        t1, c1 = time.perf_counter(), time.process_time()
        for batch in it:
            count += _size(batch)
        start_up, steady = start_up + t1 - t0, steady + time.perf_counter() - t1
        cpu += time.process_time() - c1
    return start_up, steady, count, cpu


def throughput(k: int) -> None:
    print(f"V1 throughput, 2 hosts read one after the other, batch {BATCH}, K = {k}")
    print(
        f"{'pipeline':<12}{'records':>11}{'start-up ms':>20}{'steady el/s':>26}"
        f"{'ratio steady':>14}{'ratio start':>14}{'ratio whole':>13}{'ratio CPU':>11}"
    )
    print(f"{'':<23}{'plain':>10}{'elastic':>10}{'plain':>13}{'elastic':>13}")
    for name, (n, _) in PIPELINES.items():
        plain, elastic = [], []
        for _ in range(REPS + 1):  # the first is a warm-up
            plain.append(_run(functools.partial(_plain, name, h) for h in range(2)))
            elastic.append(_run(functools.partial(_elastic, name, k, h) for h in range(2)))
        plain, elastic = plain[1:], elastic[1:]
        steady = [(p[1] * e[2]) / (e[1] * p[2]) for p, e in zip(plain, elastic)]
        start_up = [p[0] / e[0] for p, e in zip(plain, elastic)]
        whole = [(p[0] + p[1]) / (e[0] + e[1]) for p, e in zip(plain, elastic)]
        cpu = [(p[3] * e[2]) / (e[3] * p[2]) for p, e in zip(plain, elastic)]
        med = statistics.median
        print(
            f"{name:<12}{n:>11,}{med(r[0] for r in plain) * 1e3:>10.2f}"
            f"{med(r[0] for r in elastic) * 1e3:>10.2f}"
            f"{med(r[2] / r[1] for r in plain):>13,.0f}{med(r[2] / r[1] for r in elastic):>13,.0f}"
            f"{med(steady):>14.2f}{med(start_up):>14.2f}{med(whole):>13.2f}{med(cpu):>11.2f}"
        )


def checkpoint_size() -> None:
    print("V2 checkpoint bytes (JSON files of 2 hosts, half-way)")
    print(f"{'pipeline':<14}" + "".join(f"{'K=' + str(k):>10}" for k in (2, 8, 32, 128, 512)))
    for name in ("filter", "mix", "first_fit"):
        sizes = []
        for k in (2, 8, 32, 128, 512):
            total = 0
            for h in range(2):
                ds = _elastic(name, k, h, 200_000)
                it = iter(ds)
                for _ in range(sum(1 for _ in ds) // 2):
                    next(it)
                total += len(json.dumps(it.get_state(), indent=4))
            sizes.append(total)
        print(f"{name:<14}" + "".join(f"{s:>10,}" for s in sizes))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-k", type=int, default=16, help="virtual shards for V1")
    args = parser.parse_args()
    throughput(args.k)
    checkpoint_size()
