"""The cost of elastic resume with VirtualShardIterDataset (docs/multihost.md, Resuming on
another host count): ``.venv/bin/python bench/bench_virtual_shards.py``.

- V1, throughput: 2 hosts simulated in this process (``ShardOptions(h, 2)``, read one after
  the other), each reading its whole stream in batches of 32. Elastic: the pipeline built on
  each of K virtual shards (``ds[v::K]``) and the host's shards interleaved, then batched;
  plain: the same pipeline on the host's shard ``ds[h::2]``, batched. Elements/s over both
  hosts, medians of REPS runs (interleaved), and the median of the runs' ratios elastic /
  plain (each elastic run against the plain run just before it).
- V2, checkpoint size: bytes of the per-process checkpoint files (the states as JSON, indent 4,
  as ``spelt.checkpoint`` writes them) of 2 hosts, half-way through, against K.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable

import numpy as np

import spelt
import spelt.experimental

REPS = 9
BATCH = 32
N = 200_000


def _tokens(r):
    return {"tokens": np.arange(r % 9 + 1, dtype=np.int32)}


PIPELINES: dict[str, Callable[[Any], Any]] = {
    # No Python per element: the worst case for the interleave's own cost.
    "engine_only": lambda s: spelt.MapDataset.range(N)[
        s.shard_index :: s.shard_count
    ].to_iter_dataset(),
    "filter": lambda s: (
        spelt.MapDataset.range(N)[s.shard_index :: s.shard_count]
        .to_iter_dataset()
        .filter(lambda x: x % 7 != 3)
    ),
    "mix": lambda s: spelt.IterDataset.mix(
        [
            spelt.MapDataset.range(N)[s.shard_index :: s.shard_count].to_iter_dataset(),
            spelt.MapDataset.range(N, 2 * N)[s.shard_index :: s.shard_count]
            .to_iter_dataset()
            .filter(lambda x: x % 5 != 0),
        ],
        [0.7, 0.3],
    ),
    "first_fit": lambda s: spelt.experimental.FirstFitPackIterDataset(
        spelt.MapDataset.range(N)[s.shard_index :: s.shard_count].map(_tokens).to_iter_dataset(),
        length_struct={"tokens": 32},
        num_packing_bins=4,
    ),
}


def _elastic(make, k, h):
    return spelt.experimental.VirtualShardIterDataset(
        make, k, spelt.sharding.ShardOptions(h, 2), batch_size=BATCH
    )


def _plain(make, h):
    return make(spelt.sharding.ShardOptions(h, 2)).batch(BATCH)


def _rate(datasets) -> float:
    start, count = time.perf_counter(), 0
    for ds in datasets:
        for batch in ds:
            count += len(next(iter(batch.values()))) if isinstance(batch, dict) else len(batch)
    return count / (time.perf_counter() - start)


def throughput(k: int) -> None:
    print(f"V1 throughput, 2 hosts read one after the other, batch {BATCH}, K = {k}")
    print(f"{'pipeline':<14}{'plain el/s':>12}{'elastic el/s':>14}{'ratio':>7}")
    for name, make in PIPELINES.items():
        plain, elastic = [], []
        for _ in range(REPS + 1):  # the first is a warm-up
            plain.append(_rate(_plain(make, h) for h in range(2)))
            elastic.append(_rate(_elastic(make, k, h) for h in range(2)))
        ratios = [e / p for p, e in zip(plain[1:], elastic[1:])]  # each of runs close in time
        p, e = statistics.median(plain[1:]), statistics.median(elastic[1:])
        print(f"{name:<14}{p:>12,.0f}{e:>14,.0f}{statistics.median(ratios):>7.2f}")


def checkpoint_size() -> None:
    print("V2 checkpoint bytes (JSON files of 2 hosts, half-way)")
    print(f"{'pipeline':<14}" + "".join(f"{'K=' + str(k):>10}" for k in (2, 8, 32, 128, 512)))
    for name in ("filter", "mix", "first_fit"):
        sizes = []
        for k in (2, 8, 32, 128, 512):
            total = 0
            for h in range(2):
                ds = _elastic(PIPELINES[name], k, h)
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
