"""Soak run: memory and open files of long reads (``make soak``, ``SOAK_MINUTES``, default 10).

Reads two endless pipelines in turns, as a training job would, for ``--minutes``:

1. ``workers``: a Python ``random_map`` that makes a record (a 64x64 float32 image, an int label,
   a str) per index of a shuffled, repeated ``MapDataset.range``, batched by 32 and computed by
   ``mp_prefetch(MultiprocessingOptions(num_workers=2))``.
2. ``array_record``: ``ArrayRecordDataSource`` over 4 files written first with
   ``ArrayRecordWriter`` (8,192 records of a label and a 32x32x3 uint8 image), read by a
   ``DataLoader(worker_count=2)`` with a global shuffle over endless epochs, a Python parse
   operation and ``Batch(64)``.

Both iterators live for the whole run and take a checkpoint (``get_state``) every 100 batches.
Every ``--interval`` seconds (default 60) one line gives, for this process (the consumer) and
its descendants (the worker processes): the summed RSS (``VmRSS``; pages of the shared arenas
count in every process that maps them) and the open file descriptors. The first interval is
warm-up; its last sample is the baseline. The run fails (exit status 1) if the total RSS of any
later sample exceeds the baseline by more than ``--max-growth`` (default 5%), or if the fd count
or the number of processes ever differs from the baseline. Only public API is used, so this keeps
working whatever runs the workers. Linux only (reads /proc).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proc_stats  # pylint: disable=g-import-not-at-top,wrong-import-position

import spelt  # pylint: disable=g-import-not-at-top,wrong-import-position

WORKER_RECORDS = 100_000
WORKER_BATCH = 32
AR_FILES = 4
AR_RECORDS_PER_FILE = 2_048
AR_IMAGE = (32, 32, 3)
AR_BATCH = 64
CHECKPOINT_EVERY = 100  # batches
MIB = 1 << 20


def make_record(index, rng):
    """Record of the workers pipeline (runs in the worker processes)."""
    image = rng.standard_normal((64, 64), dtype=np.float32)
    return {"image": image, "label": int(index) % 1000, "name": f"record-{index}"}


class ParseRecord(spelt.transforms.Map):
    """ArrayRecord bytes (int64 label, then the image) -> {"label", "image"}."""

    def map(self, element):
        return {
            "label": np.frombuffer(element, dtype=np.int64, count=1)[0],
            "image": np.frombuffer(element, dtype=np.uint8, offset=8).reshape(AR_IMAGE),
        }


def write_array_records(directory: str) -> list[str]:
    paths = []
    image = np.arange(np.prod(AR_IMAGE), dtype=np.uint32).astype(np.uint8).reshape(AR_IMAGE)
    for f in range(AR_FILES):
        path = os.path.join(directory, f"soak-{f:05d}-of-{AR_FILES:05d}.array_record")
        writer = spelt.experimental.ArrayRecordWriter(path, "group_size:16,zstd:3")
        for i in range(AR_RECORDS_PER_FILE):
            key = f * AR_RECORDS_PER_FILE + i
            writer.write(np.int64(key).tobytes() + (image + key % 251).tobytes())
        writer.close()
        paths.append(path)
    return paths


def workers_pipeline():
    return (
        spelt.MapDataset.range(WORKER_RECORDS)
        .seed(1)
        .shuffle()
        .repeat()
        .random_map(make_record)
        .batch(WORKER_BATCH)
        .to_iter_dataset()
        .mp_prefetch(spelt.MultiprocessingOptions(num_workers=2))
    )


def array_record_loader(paths: list[str]):
    source = spelt.sources.ArrayRecordDataSource(paths)
    return spelt.DataLoader(
        data_source=source,
        sampler=spelt.samplers.IndexSampler(
            len(source),
            num_epochs=None,
            shuffle=True,
            seed=2,
            shard_options=spelt.sharding.NoSharding(),
        ),
        operations=[ParseRecord(), spelt.transforms.Batch(AR_BATCH)],
        worker_count=2,
    )


@dataclasses.dataclass(frozen=True)
class Sample:
    seconds: float
    batches: int  # of each pipeline
    consumer_rss: int
    workers_rss: int
    consumer_fds: int
    workers_fds: int
    processes: int

    @property
    def rss(self) -> int:
        return self.consumer_rss + self.workers_rss

    @property
    def fds(self) -> int:
        return self.consumer_fds + self.workers_fds


def take_sample(start: float, batches: int) -> Sample:
    consumer, workers = proc_stats.tree_stats(os.getpid())
    return Sample(
        time.monotonic() - start,
        batches,
        consumer.rss_bytes,
        sum(w.rss_bytes for w in workers),
        consumer.open_fds,
        sum(w.open_fds for w in workers),
        len(workers),
    )


HEADER = (
    f"{'min':>6} {'batches (each)':>14} {'RSS consumer':>13}"
    f" {'RSS workers':>12} {'RSS total':>10} {'growth':>7} {'fds':>9} {'procs':>5}"
)


def line(s: Sample, baseline: Sample | None) -> str:
    growth = "warm-up" if baseline is None else f"{(s.rss / baseline.rss - 1) * 100:+.1f}%"
    return (
        f"{s.seconds / 60:6.1f} {s.batches:14d}"
        f" {s.consumer_rss / MIB:9.1f} MiB {s.workers_rss / MIB:8.1f} MiB"
        f" {s.rss / MIB:6.0f} MiB {growth:>7} {s.consumer_fds:4d}+{s.workers_fds:<4d}"
        f" {s.processes:5d}"
    )


def check_batches(worker_batch, ar_batch) -> None:
    assert worker_batch["image"].shape == (WORKER_BATCH, 64, 64), worker_batch["image"].shape
    assert ar_batch["image"].shape == (AR_BATCH, *AR_IMAGE), ar_batch["image"].shape


def soak(minutes: float, interval: float, max_growth: float) -> bool:
    """Reads both pipelines for `minutes`, printing a sample per `interval` s; True if flat."""
    with tempfile.TemporaryDirectory(prefix="spelt-soak-") as directory:
        paths = write_array_records(directory)
        iterators = [iter(workers_pipeline()), iter(array_record_loader(paths))]
        print(
            f"soak: {minutes:g} min, a sample every {interval:g} s; pipelines: workers"
            f" (mp_prefetch, 2 workers), array_record (DataLoader, 2 workers)\n{HEADER}",
            flush=True,
        )
        start = time.monotonic()
        end, next_sample = start + minutes * 60, start + interval
        batches, baseline, samples = 0, None, []
        while True:
            elements = [next(it) for it in iterators]
            check_batches(*elements)
            del elements  # release the batches' shared memory before a sample is taken
            batches += 1
            if batches % CHECKPOINT_EVERY == 0:
                for it in iterators:
                    it.get_state()
            now = time.monotonic()
            if now >= next_sample or now >= end:
                sample = take_sample(start, batches)
                print(line(sample, baseline), flush=True)
                if baseline is None:
                    baseline = sample
                else:
                    samples.append(sample)
                next_sample += interval
            if now >= end:
                break
        for it in iterators:
            it.close()
    return verdict(baseline, samples, max_growth)


def verdict(baseline: Sample, samples: list[Sample], max_growth: float) -> bool:
    if not samples:
        print("soak: FAILED: the run ended within the warm-up interval; nothing to compare")
        return False
    worst = max(samples, key=lambda s: s.rss)
    growth = worst.rss / baseline.rss - 1
    fds = sorted({s.fds for s in samples} | {baseline.fds})
    processes = sorted({s.processes for s in samples} | {baseline.processes})
    ok = growth <= max_growth and len(fds) == 1 and len(processes) == 1
    print(
        f"soak: {'OK' if ok else 'FAILED'}: RSS {baseline.rss / MIB:.0f} MiB after warm-up,"
        f" at most {worst.rss / MIB:.0f} MiB later ({growth * 100:+.1f}%, limit"
        f" {max_growth * 100:.0f}%); open fds {fds}; processes {processes}"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the run")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    parser.add_argument(
        "--max-growth",
        type=float,
        default=0.05,
        help="allowed RSS growth over the baseline (fraction)",
    )
    args = parser.parse_args(argv)
    return 0 if soak(args.minutes, args.interval, args.max_growth) else 1


if __name__ == "__main__":
    sys.exit(main())
