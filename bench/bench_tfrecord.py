"""S2: sequential TFRecord reads, Spelt's TFRecordIterDataset vs Grain's (PyPI ``grain``).

Run alone with ``.venv/bin/python bench/bench_tfrecord.py [-k PATTERN] [--reps N]``, or from
another script with ``bench_tfrecord.main([...])`` (``bench/bench.py`` calls it, so
``make bench`` includes it). Everything runs in one process, on the same files:

1. **Files.** Two uncompressed TFRecord files in ``build/bench/tfrecord/``, written once by
   Spelt's ``TFRecordWriter`` and reused while valid: 200,000 records of about 1 KiB (~200 MB)
   and 3,000 records of about 100 KiB (~300 MB). Sizes vary +-25% around the nominal size
   (the record generator of bench_array_record.py).
2. **Same records.** Before timing, the bench asserts that both datasets yield the expected
   records (the first 1,000, and the count of all).
3. **Measured.** ``for record in TFRecordIterDataset(path)`` over the whole file, one thread.
   Spelt checks the masked CRC32C of every length and payload; Grain checks none. Each side
   gets one unmeasured warm-up (the file is then in the page cache), then the repetitions
   alternate Spelt, Grain, Spelt, ...; reported are the median records/s and MB/s (10^6 bytes
   of payload per second), the spread, and the ratio of the medians. Goal (issue 10, S2):
   Spelt >= 3x Grain on 1 KiB records.
4. **memcpy.** On 100 KiB records Spelt is also compared with a numpy copy of a 256 MiB buffer
   (memcpy bandwidth, bytes copied per second), interleaved with the reads. Goal: Spelt's MB/s
   within 2x of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import itertools
import logging
import os
import statistics
import time
from pathlib import Path

import numpy as np

logging.getLogger("absl").setLevel(logging.ERROR)

import bench_array_record as bar  # noqa: E402  (Side, interleave, Records, malloc state)
import grain  # noqa: E402
import spelt.experimental  # noqa: E402

DATA_DIR = Path(__file__).resolve().parent.parent / "build" / "bench" / "tfrecord"
REPS = 5
CHECKED_RECORDS = 1000
GOAL_GRAIN = 3.0
GOAL_MEMCPY = 2.0


@dataclasses.dataclass(frozen=True)
class FileSpec:
    """One benchmark file; its records are bench_array_record.Records of the same sizes."""

    record_size: int
    num_records: int

    @property
    def label(self) -> str:
        return f"{self.record_size >> 10} KiB records"

    @property
    def path(self) -> Path:
        return DATA_DIR / f"r{self.record_size}-n{self.num_records}.tfrecord"

    def records(self) -> bar.Records:
        return bar.Records(bar.FileSpec(self.record_size, self.num_records, "tfrecord", 0))


FILES = [FileSpec(1 << 10, 200_000), FileSpec(100 << 10, 3_000)]


def ensure_file(spec: FileSpec, records: bar.Records) -> str:
    """spec's path, written first unless a file of the right size and head is there."""
    expected_size = int(records.sizes.sum()) + 16 * len(records)
    if spec.path.exists() and spec.path.stat().st_size == expected_size:
        head = itertools.islice(spelt.experimental.TFRecordIterDataset(spec.path), 16)
        if all(r == records[i] for i, r in enumerate(head)):
            return str(spec.path)
    spec.path.parent.mkdir(parents=True, exist_ok=True)
    partial = spec.path.with_suffix(".partial")
    with spelt.experimental.TFRecordWriter(partial) as writer:
        for record in records:
            writer.write(record)
    os.replace(partial, spec.path)
    print(f"  wrote {spec.path.name} ({expected_size / 1e6:,.0f} MB)")
    return str(spec.path)


def check_same_records(path: str, records: bar.Records) -> None:
    """Both datasets yield the expected first records and the right count."""
    for name, ds in (
        ("Spelt", spelt.experimental.TFRecordIterDataset(path)),
        ("Grain", grain.experimental.TFRecordIterDataset(path)),
    ):
        it = iter(ds)
        for i in range(min(CHECKED_RECORDS, len(records))):
            assert next(it) == records[i], f"{name}: record {i} differs"
        assert CHECKED_RECORDS + sum(1 for _ in it) == len(records), f"{name}: record count"


def read_all(make_ds, path: str) -> None:
    for _ in make_ds(path):
        pass


def measure(spec: FileSpec, reps: int) -> list[bar.Side]:
    records = spec.records()
    path = ensure_file(spec, records)
    check_same_records(path, records)
    nbytes = int(records.sizes.sum())
    n = len(records)
    sides = [
        bar.Side(
            "Spelt (every CRC checked)",
            lambda: read_all(spelt.experimental.TFRecordIterDataset, path),
            n,
            nbytes,
        ),
        bar.Side(
            "Grain (no CRC checked)",
            lambda: read_all(grain.experimental.TFRecordIterDataset, path),
            n,
            nbytes,
        ),
    ]
    if spec.record_size >= 64 << 10:
        src = np.ones(bar.MEMCPY_BYTES, np.uint8)
        dst = np.zeros_like(src)
        sides.append(
            bar.Side(
                f"memcpy: numpy copy of {bar.MEMCPY_BYTES >> 20} MiB",
                lambda: np.copyto(dst, src),
                0,
                bar.MEMCPY_BYTES,
            )
        )
    bar.interleave(sides, reps)
    return sides


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def _cpu_ratio(sides: list[bar.Side]) -> float:
    """memcpy's median MB per CPU-second over Spelt's."""
    per_cpu = [
        statistics.median(mb / cores for mb, cores in zip(side.mb_per_s(), side.cores))
        for side in (sides[2], sides[0])
    ]
    return per_cpu[0] / per_cpu[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the files whose label contains this")
    parser.add_argument("--reps", type=int, default=REPS)
    args = parser.parse_args(argv)
    files = [f for f in FILES if args.k in f.label or args.k in "TFRecord"]
    if not files:
        return
    print(
        f"\nS2: TFRecordIterDataset, Spelt vs Grain {importlib.metadata.version('grain')}, "
        f"{args.reps} repetitions after one warm-up each, "
        f"load average {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d')}"
    )
    bar.raise_malloc_thresholds()
    verdicts = []
    for spec in files:
        sides = measure(spec, args.reps)
        print(f"\n{spec.label} ({sides[0].records:,} records, {sides[0].nbytes / 1e6:,.0f} MB):")
        for side in sides:
            rate = "" if not side.records else f"{_spread(side.records_per_s())} records/s, "
            cpu = [mb / cores for mb, cores in zip(side.mb_per_s(), side.cores)]
            print(
                f"  {side.name:<34} {rate}{_spread(side.mb_per_s())} MB/s, "
                f"{statistics.median(cpu):,.0f} MB per CPU-second"
            )
        spelt_mb = sides[0].median_mb_per_s()
        ratio = spelt_mb / sides[1].median_mb_per_s()
        print(f"  Spelt/Grain: {ratio:.1f}x")
        if spec.record_size < 64 << 10:
            verdicts.append(f"Spelt >= {GOAL_GRAIN:g}x Grain on {spec.label}: {ratio:.1f}x")
            verdicts[-1] += " (met)" if ratio >= GOAL_GRAIN else " (NOT met)"
        else:
            memcpy = sides[2].median_mb_per_s()
            print(f"  memcpy/Spelt: {memcpy / spelt_mb:.2f}x (CPU time: {_cpu_ratio(sides):.2f}x)")
            verdicts.append(
                f"Spelt within {GOAL_MEMCPY:g}x of memcpy on {spec.label}: "
                f"{memcpy / spelt_mb:.2f}x"
                + (" (met)" if memcpy / spelt_mb <= GOAL_MEMCPY else " (NOT met)")
            )
    print("\ngoals: " + "; ".join(verdicts))


if __name__ == "__main__":
    main()
