"""Sequence packing, Spelt vs Grain (PyPI ``grain``) in the same run (``make bench``, or
``.venv/bin/python bench/bench_packing.py [-k P6a]``).

Documents: two int32 features ("inputs", "targets": the inputs shifted by one) of lognormal
lengths (mean ~400 tokens, clipped to [1, 4096]), in memory, read through
``MapDataset.source(docs).to_iter_dataset()`` by both engines.

- P6a: ``FirstFitPackIterDataset`` to sequence length 2048 with 64 bins, of the documents
  truncated to 2048 tokens beforehand (untimed; first-fit does not split). Also reports the
  packing efficiency (non-padding fraction of the packed "inputs") of each engine, which must
  be equal: the outputs are checked identical first.
- P6b: ``ConcatThenSplitIterDataset`` to sequence length 2048.
- P6c: the LM input job of ``make demo-lm`` (examples/lm_data.py), 0 worker processes: the
  documents (one int32 token array each, cut to 2049 tokens) stored as ArrayRecord shards,
  read with a global shuffle, parsed into inputs / targets, packed first-fit (2048, 64 bins)
  and batched 8 x 2048. Goal: Spelt >= 2M tokens/s, Grain's figure beside it.

Each repetition packs the whole document list (Grain: its first GRAIN_DOCS documents, as it is
slow) and counts input tokens per second; one warm-up each, then Spelt and Grain repetitions
interleaved; medians, spreads and the ratio of the medians are printed (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

logging.getLogger("absl").setLevel(logging.ERROR)

import grain  # noqa: E402
import grain.experimental  # noqa: E402, F401

import spelt  # noqa: E402
import spelt.experimental  # noqa: E402, F401

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES_DIR)
import lm_data  # noqa: E402  (the LM input job of `make demo-lm`)

NUM_DOCS = 20_000
GRAIN_DOCS = 3_000
SEQ_LEN = 2048
BINS = 64
REPS = 5
GRAIN_REPS = 3
GOAL_RATIO = 10.0
LM_BATCH = 8
LM_GOAL_TOKENS_PER_S = 2e6


def lognormal_documents(n: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """n documents {"inputs", "targets"} of int32 tokens, lognormal lengths, mean ~400."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(400) - 0.5, 1.0, n), 1, 4096).astype(np.int64)
    docs = []
    for length in lengths:
        tokens = rng.integers(1, 50_000, length + 1, dtype=np.int32)
        docs.append({"inputs": tokens[:-1], "targets": tokens[1:]})
    return docs


def truncated(docs: list[dict]) -> list[dict]:
    """The documents cut to SEQ_LEN tokens (first-fit packing does not split sequences)."""
    return [{k: v[:SEQ_LEN] for k, v in d.items()} for d in docs]


def first_fit(g: Any, docs: list[dict]) -> Any:
    return g.experimental.FirstFitPackIterDataset(
        g.MapDataset.source(docs).to_iter_dataset(),
        length_struct={"inputs": SEQ_LEN, "targets": SEQ_LEN},
        num_packing_bins=BINS,
        seed=0,
    )


def concat_then_split(g: Any, docs: list[dict]) -> Any:
    return g.experimental.ConcatThenSplitIterDataset(
        g.MapDataset.source(docs).to_iter_dataset(),
        length_struct={"inputs": SEQ_LEN, "targets": SEQ_LEN},
    )


CASES: dict[str, tuple[str, Callable[[Any, list[dict]], Any]]] = {
    "P6a": ("FirstFitPackIterDataset, 2048 x 64 bins", first_fit),
    "P6b": ("ConcatThenSplitIterDataset, 2048", concat_then_split),
}


def efficiency(packed: list[dict]) -> float:
    """Fraction of the packed "inputs" positions that hold a token."""
    used = sum(int(np.count_nonzero(p["inputs_segment_ids"])) for p in packed)
    return used / (len(packed) * SEQ_LEN)


def tokens_per_s(g: Any, build: Callable, docs: list[dict]) -> float:
    tokens = sum(len(d["inputs"]) for d in docs)
    start = time.perf_counter()
    for _ in build(g, docs):
        pass
    return tokens / (time.perf_counter() - start)


def run_case(name: str, docs: list[dict]) -> tuple[float, float]:
    title, build = CASES[name]
    if build is first_fit:
        docs = truncated(docs)
    check = docs[:GRAIN_DOCS]
    spelt_out, grain_out = list(build(spelt, check)), list(build(grain, check))
    assert len(spelt_out) == len(grain_out), (len(spelt_out), len(grain_out))
    for a, b in zip(spelt_out, grain_out):
        assert list(a) == list(b)
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    tokens_per_s(spelt, build, docs)  # warm-up
    tokens_per_s(grain, build, check)
    s_rates, g_rates = [], []
    for rep in range(REPS):
        s_rates.append(tokens_per_s(spelt, build, docs))
        if rep < GRAIN_REPS:
            g_rates.append(tokens_per_s(grain, build, check))
    s, g = statistics.median(s_rates), statistics.median(g_rates)
    print(
        f"{name} {title}: outputs identical on {len(check):,} documents"
        f" (efficiency Spelt {efficiency(spelt_out):.4f}, Grain {efficiency(grain_out):.4f})\n"
        f"  Spelt {s / 1e6:8.2f} M tokens/s (min {min(s_rates) / 1e6:.2f}, max"
        f" {max(s_rates) / 1e6:.2f})   Grain {g / 1e6:6.3f} M tokens/s (min"
        f" {min(g_rates) / 1e6:.3f}, max {max(g_rates) / 1e6:.3f})   ratio {s / g:5.1f}x"
    )
    if name == "P6a":
        full = list(build(spelt, docs))
        print(f"  Spelt efficiency on all {len(docs):,} documents: {efficiency(full):.4f}")
    return s, g


def lm_job_tokens_per_s(g: Any, paths: list[str]) -> float:
    """Non-padding tokens per second of one epoch of the LM input job on engine g."""
    start, tokens = time.perf_counter(), 0
    for batch in lm_data.make_dataset(g, paths, SEQ_LEN, LM_BATCH):
        tokens += lm_data.tokens_in(batch)
    return tokens / (time.perf_counter() - start)


def lm_job_digests(g: Any, paths: list[str]) -> list[str]:
    return [lm_data.batch_digest(b) for b in lm_data.make_dataset(g, paths, SEQ_LEN, LM_BATCH)]


def run_lm_job(docs: list[dict]) -> None:
    """P6c: ArrayRecord -> shuffle -> parse -> first-fit pack -> batch, Spelt vs Grain."""
    stored = [np.append(d["inputs"], d["targets"][-1:])[: SEQ_LEN + 1] for d in docs]
    with tempfile.TemporaryDirectory() as tmp:
        everything, check = Path(tmp) / "all", Path(tmp) / "check"
        lm_data.write_shards(stored, everything)
        lm_data.write_shards(stored[:GRAIN_DOCS], check)
        all_paths, check_paths = lm_data.shard_paths(everything), lm_data.shard_paths(check)
        same = lm_job_digests(spelt, check_paths) == lm_job_digests(grain, check_paths)
        assert same, "Spelt's and Grain's LM batches differ"
        lm_job_tokens_per_s(spelt, all_paths)  # warm-up (Grain's was the check)
        s_rates, g_rates = [], []
        for rep in range(REPS):
            s_rates.append(lm_job_tokens_per_s(spelt, all_paths))
            if rep < GRAIN_REPS:
                g_rates.append(lm_job_tokens_per_s(grain, check_paths))
    s, g = statistics.median(s_rates), statistics.median(g_rates)
    verdict = "met" if s >= LM_GOAL_TOKENS_PER_S else "NOT met"
    print(
        f"P6c LM input job (ArrayRecord, shuffle, pack 2048 x 64 bins, batch {LM_BATCH}), 0"
        f" workers: batches identical on {GRAIN_DOCS:,} documents\n"
        f"  Spelt {s / 1e6:8.2f} M tokens/s (min {min(s_rates) / 1e6:.2f}, max"
        f" {max(s_rates) / 1e6:.2f})   Grain {g / 1e6:6.3f} M tokens/s (min"
        f" {min(g_rates) / 1e6:.3f}, max {max(g_rates) / 1e6:.3f})   ratio {s / g:5.1f}x\n"
        f"goal Spelt >= {LM_GOAL_TOKENS_PER_S / 1e6:g}M tokens/s: {verdict}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)
    names = [n for n in CASES if args.k in n]
    lm_job = args.k in "P6c LM input job"
    if not names and not lm_job:
        return
    docs = lognormal_documents(NUM_DOCS)
    tokens = sum(len(d["inputs"]) for d in docs)
    print(
        f"\nPacking: {len(docs):,} documents, {tokens:,} tokens per feature (mean"
        f" {tokens / len(docs):.0f}, max {max(len(d['inputs']) for d in docs)}), 2 int32 features;"
        f" Grain packs the first {GRAIN_DOCS:,}; {REPS} Spelt / {GRAIN_REPS} Grain repetitions"
    )
    ratios = [(lambda s, g: s / g)(*run_case(n, docs)) for n in names]
    if ratios:
        verdict = "met" if min(ratios) >= GOAL_RATIO else "NOT met"
        print(
            f"goal Spelt >= {GOAL_RATIO:g}x Grain tokens/s: {verdict} (lowest {min(ratios):.1f}x)"
        )
    if lm_job:
        run_lm_job(docs)


if __name__ == "__main__":
    main()
