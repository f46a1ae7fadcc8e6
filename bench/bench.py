"""``make bench``: every side-by-side benchmark of Spelt and Grain (PyPI ``grain``), in order.

Run with ``make bench`` (or ``.venv/bin/python bench/bench.py [-k PATTERN]``); ``-k`` passes
on to each bench, which runs only its cases whose name contains it. The in-memory MNIST-like
cases come first (bench_mnist.py, which also describes the method: identical outputs checked
first, interleaved repetitions, medians and ratios); then the benches of each part of the
engine. See docs/benchmarks.md for the figures.
"""

from __future__ import annotations

import argparse
import importlib

# In this order, each imported when it is reached (as each imports what it compares).
_BENCHES = [
    "bench_mnist",  # the in-memory cases, Spelt vs Grain
    "bench_array_record",  # ArrayRecord reads, Spelt vs array-record
    "bench_workers",  # worker processes, Spelt vs Grain
    "bench_autotune",  # A1: mp_prefetch(autotune=True) vs a hand-picked sweep
    "bench_reads",  # batched reads through pipelines (M1, R1)
    "bench_tfrecord",  # S2: TFRecordIterDataset, Spelt vs Grain
    "bench_parquet",  # Parquet (S1) and spelt convert (S3), Spelt vs Grain / by hand
    "bench_packing",  # sequence packing (P6a, P6b), Spelt vs Grain
    "bench_device_put",  # A2: device_put on 8 CPU devices, Spelt vs Grain
    "bench_summary",  # O1: cost of execution-summary tracking
    "bench_interleave",  # interleave, thread prefetch, cache (I1-I3)
    "bench_ray",  # Spelt on Ray actors (D1, D2, per-chunk overhead)
    "bench_regroup",  # window shuffles, rebatch, flat map, batch_and_pad
    "bench_blocking",  # Python code on the read threads (B1, B2), Spelt vs Grain
    "bench_vision",  # native image ops (V1-V3, peak memory), Spelt vs Grain and simplejpeg
    "bench_remote",  # object-store reads at a round trip (remote O1, O3, the model)
    "bench_house",  # H1-H3 of issue 19 (alone here; --baseline PYTHON compares two builds)
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    args = parser.parse_args()
    for name in _BENCHES:
        importlib.import_module(name).main(["-k", args.k])


if __name__ == "__main__":
    main()
