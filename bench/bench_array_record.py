"""ArrayRecord random and sequential reads, Spelt vs the ``array-record`` package (PyPI).

Run alone with ``.venv/bin/python bench/bench_array_record.py [-k PATTERN] [--reps N]
[--no-fresh]``, or from another script with ``bench_array_record.main([...])``
(``bench/bench.py`` calls it at the end, so ``make bench`` includes it). Everything but step 6
runs in one process, on the same files:

1. **Files.** Six ArrayRecord files in ``build/bench/array_record/``, written once by Spelt's
   writer and reused while they are valid: 100,000 records of about 1 KiB and 10,000 records
   of about 100 KiB (~1 GB; 100,000 would be 10 GB), each uncompressed and zstd (level 3)
   with ``group_size:1`` (array-record's default), and uncompressed with ``group_size:64``
   (where a random read decodes a 64-record chunk). Record sizes vary +-25% around the
   nominal size; the bytes are drawn from 16 values, so zstd halves them.
2. **Same bytes.** Before timing a file, the bench asserts that Spelt's
   ``spelt.sources.ArrayRecordDataSource`` and array-record's ``ArrayRecordDataSource``
   return the expected bytes, one at a time and batched.
3. **Warm.** Each file is read through once before its first measurement and its page-cache
   residency printed (``fincore``); each reader gets one unmeasured warm-up repetition of
   every case. glibc's malloc thresholds are raised first (``raise_malloc_thresholds``).
4. **Random reads.** The same random permutation of the record keys, read one index at a
   time (``ds[i]`` in a Python loop) and in batches of 128 (``ds.__getitems__(batch)``).
   Repetitions alternate Spelt, array-record, Spelt, ...; reported are the median
   records/s and MB/s (10^6 bytes of record payload per second), the spread (min-max
   records/s), the cores kept busy (process CPU time / wall time) and the ratio of the
   medians. Goal (issue 7, R1): Spelt >= 2x array-record, batched.
5. **Sequential read.** Spelt reads the uncompressed 1 KiB file front to back in one thread
   (the native ``read_many(keys, num_threads=1)`` behind ``__getitems__``, over consecutive
   ranges of 1,024 keys; payload into Python ``bytes``), with and without data-hash checks,
   interleaved with a numpy copy of a 256 MiB buffer (memcpy bandwidth: bytes copied per
   second) and, for context, array-record's ``__getitems__`` over the same ranges.
   Goal: within 2x of memcpy.
6. **Fresh processes.** The batched 100 KiB reads again, each repetition in a new
   interpreter, where glibc's malloc thresholds are still at their start values (both
   readers are much slower there; see ``raise_malloc_thresholds``). ``--no-fresh`` skips it.

The machine is shared and has two cores: the load average is printed at the start and the
end, and the interleaving makes drift hit both sides alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.metadata
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

# array-record logs through absl; its warnings (e.g. about flags) are irrelevant here.
logging.getLogger("absl").setLevel(logging.ERROR)

from array_record.python.array_record_data_source import (  # noqa: E402
    ArrayRecordDataSource as ARDataSource,
)
import spelt  # noqa: E402
import spelt.array_record  # noqa: E402
import spelt.experimental  # noqa: E402
import spelt.sources  # noqa: E402

DATA_DIR = Path(__file__).resolve().parent.parent / "build" / "bench" / "array_record"
BATCH_SIZE = 128
REPS = 5
SEQUENTIAL_CHUNK = 1024
MEMCPY_BYTES = 256 << 20
MALLOC_BUMP_BYTES = 30 << 20
FRESH_REPS = 3
FRESH_MIN_RECORD_SIZE = 64 << 10  # smaller records are not sensitive to the malloc state
GOAL_BATCHED = 2.0
GOAL_MEMCPY = 2.0
SEED = 0


# ---------------------------------------------------------------------------------------------
# The files.


@dataclasses.dataclass(frozen=True)
class FileSpec:
    """One benchmark file: its records are a pure function of these fields (and SEED)."""

    record_size: int  # nominal bytes per record; actual sizes are uniform in +-25%
    num_records: int
    compression: str  # "uncompressed" or "zstd"
    single_reads: int  # keys read per repetition of the one-at-a-time case
    group_size: int = 1
    batched_reads: int | None = None  # keys read per batched repetition; None: all

    @property
    def label(self) -> str:
        size = f"{self.record_size >> 10} KiB"
        group = f", group_size {self.group_size}" if self.group_size != 1 else ""
        return f"{size} {self.compression}{group}"

    @property
    def path(self) -> Path:
        group = f"-g{self.group_size}" if self.group_size != 1 else ""
        return DATA_DIR / (
            f"r{self.record_size}-n{self.num_records}-{self.compression}{group}.array_record"
        )

    @property
    def options(self) -> str:
        return f"group_size:{self.group_size}," + (
            "uncompressed" if self.compression == "uncompressed" else "zstd:3"
        )


# Batched repetitions read every record of the file (the first batched_reads keys of the
# permutation where given); one-at-a-time ones read the first single_reads keys, as
# array-record takes ~100 us per ds[i] on this machine. With group_size 64 a random read of
# a 100 KiB record decodes 6.4 MB, so that file reads fewer. A repetition takes ~0.1-3 s here.
FILES = [
    FileSpec(1 << 10, 100_000, "uncompressed", single_reads=20_000),
    FileSpec(1 << 10, 100_000, "zstd", single_reads=20_000),
    FileSpec(1 << 10, 100_000, "uncompressed", single_reads=5_000, group_size=64),
    FileSpec(100 << 10, 10_000, "uncompressed", single_reads=2_000),
    FileSpec(100 << 10, 10_000, "zstd", single_reads=2_000),
    FileSpec(
        100 << 10, 10_000, "uncompressed", single_reads=100, group_size=64, batched_reads=5 * 128
    ),
]


class Records:
    """The records of a FileSpec, generated on demand (never all in memory).

    Record i is its index (8 bytes, little-endian) followed by a slice of a fixed pool of
    random bytes in [0, 16), at a random offset: distinct records, compressible ~2x by zstd.
    """

    _POOL_BYTES = 8 << 20

    def __init__(self, spec: FileSpec):
        rng = np.random.default_rng([SEED, spec.record_size, spec.num_records])
        low, high = spec.record_size * 3 // 4, spec.record_size * 5 // 4
        self.sizes = rng.integers(low, high + 1, spec.num_records)
        self._offsets = rng.integers(0, self._POOL_BYTES - high, spec.num_records)
        self._pool = rng.integers(0, 16, self._POOL_BYTES, dtype=np.uint8).tobytes()

    def __len__(self) -> int:
        return len(self.sizes)

    def __getitem__(self, i: int) -> bytes:
        offset = int(self._offsets[i])
        return i.to_bytes(8, "little") + self._pool[offset : offset + int(self.sizes[i]) - 8]

    def __iter__(self) -> Iterator[bytes]:
        return (self[i] for i in range(len(self)))


def _is_valid(spec: FileSpec, records: Records) -> bool:
    """Whether spec.path holds exactly the records of spec: index facts, then a sample."""
    try:
        info = spelt.array_record.info(spec.path)
        if (
            info["num_records"] != spec.num_records
            or info["group_size"] != spec.group_size
            or info["compression"] != spec.compression
            or info["decoded_bytes"] != int(records.sizes.sum())
        ):
            return False
        ds = spelt.sources.ArrayRecordDataSource(str(spec.path))
        sample = np.random.default_rng(SEED).choice(spec.num_records, 64, replace=False)
        return all(ds[int(i)] == records[int(i)] for i in sample)
    except (OSError, ValueError, NotImplementedError):
        return False  # missing, truncated or corrupt: write it again


def ensure_file(spec: FileSpec, records: Records) -> str:
    """Returns spec's path, writing the file first unless a valid one is there."""
    if _is_valid(spec, records):
        return str(spec.path)
    spec.path.parent.mkdir(parents=True, exist_ok=True)
    partial = spec.path.with_suffix(".partial")
    start = time.perf_counter()
    with spelt.experimental.ArrayRecordWriter(partial, spec.options) as writer:
        for record in records:
            writer.write(record)
    os.replace(partial, spec.path)  # never leaves a half-written file under the final name
    print(
        f"  wrote {spec.path.name} ({spec.path.stat().st_size / 1e6:,.0f} MB) "
        f"in {time.perf_counter() - start:.1f} s"
    )
    return str(spec.path)


def warm_page_cache(path: str) -> str:
    """Reads the whole file once (into the page cache); says how fast and how much is resident.

    Residency comes from util-linux ``fincore`` where it is installed.
    """
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        buffer = bytearray(8 << 20)
        while f.readinto(buffer):
            pass
    seconds = time.perf_counter() - start
    size = os.path.getsize(path)
    note = f"read once to warm the page cache ({size / 1e9 / seconds:.1f} GB/s)"
    try:
        resident = subprocess.run(
            ["fincore", "--bytes", "--noheadings", "--output", "RES", path],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        note += f", {int(resident) / size:.0%} resident"
    except (OSError, ValueError, subprocess.CalledProcessError):
        pass
    return note


# ---------------------------------------------------------------------------------------------
# Measuring.


@dataclasses.dataclass
class Side:
    """One reader (or the memcpy) doing a fixed workload; the seconds of each repetition."""

    name: str
    run: Callable[[], Any]
    records: int  # records per repetition (0 for memcpy)
    nbytes: int  # payload bytes per repetition (bytes copied, for memcpy)
    seconds: list[float] = dataclasses.field(default_factory=list)
    cores: list[float] = dataclasses.field(default_factory=list)  # process CPU time / wall time

    def once(self) -> None:
        cpu = time.process_time()  # all threads of the process
        start = time.perf_counter()
        self.run()
        self.seconds.append(time.perf_counter() - start)
        self.cores.append((time.process_time() - cpu) / self.seconds[-1])

    def records_per_s(self) -> list[float]:
        return [self.records / s for s in self.seconds]

    def mb_per_s(self) -> list[float]:
        """10^6 bytes per second, per repetition."""
        return [self.nbytes / 1e6 / s for s in self.seconds]

    def median_mb_per_s(self) -> float:
        return statistics.median(self.mb_per_s())


def interleave(sides: Sequence[Side], reps: int) -> None:
    """One unmeasured warm-up of each side, then reps measured ones of each: a b a b ..."""
    for side in sides:
        side.run()
    for _ in range(reps):
        for side in sides:
            side.once()


@dataclasses.dataclass
class Comparison:
    """One case measured on Spelt and on array-record, with the same keys."""

    case: str
    spelt: Side
    array_record: Side

    @property
    def ratio(self) -> float:
        """Spelt's median records/s over array-record's."""
        return statistics.median(self.spelt.records_per_s()) / statistics.median(
            self.array_record.records_per_s()
        )


def _read_one_at_a_time(ds: Any, keys: list[int]) -> None:
    for key in keys:
        ds[key]


def _read_batched(ds: Any, batches: list[list[int]]) -> None:
    for batch in batches:
        ds.__getitems__(batch)


def check_same_bytes(spec: FileSpec, records: Records, readers: dict[str, Any]) -> None:
    """Asserts every reader returns the expected records, one at a time and in a batch."""
    keys = [int(k) for k in np.random.default_rng(SEED + 1).permutation(spec.num_records)[:256]]
    expected = [records[k] for k in keys]
    for name, ds in readers.items():
        assert len(ds) == spec.num_records, f"{spec.label}: {name} has {len(ds)} records"
        assert [ds[k] for k in keys[:32]] == expected[:32], f"{spec.label}: {name}[i] differs"
        assert list(ds.__getitems__(keys)) == expected, f"{spec.label}: {name} batch differs"


def measure_random(
    spec: FileSpec, records: Records, path: str, reps: int, pattern: str
) -> list[Comparison]:
    """The one-at-a-time and batched random-read comparisons of one file (those matching)."""
    readers = {
        "Spelt": spelt.sources.ArrayRecordDataSource(path),
        "array-record": ARDataSource(path),
    }
    check_same_bytes(spec, records, readers)
    keys = [int(k) for k in np.random.default_rng(SEED).permutation(spec.num_records)]
    single = keys[: spec.single_reads]
    batched = keys[: spec.batched_reads]
    batches = [batched[i : i + BATCH_SIZE] for i in range(0, len(batched), BATCH_SIZE)]
    cases = [
        (f"{spec.label}, ds[i]", _read_one_at_a_time, single, single),
        (f"{spec.label}, batch {BATCH_SIZE}", _read_batched, batches, batched),
    ]
    if spec.group_size > 1:
        # Spelt's reader reads single records of an uncompressed chunk in place once it has
        # checked the chunk whole: here each repetition opens new readers, so it pays for that.
        cases.append(
            (f"{spec.label}, batch {BATCH_SIZE}, new reader", _read_batched, batches, batched)
        )
    comparisons = []
    for case, read, work, read_keys in cases:
        if pattern not in case:
            continue
        nbytes = int(records.sizes[read_keys].sum())
        sides = []
        for name, ds in readers.items():
            if case.endswith("new reader"):
                make = type(ds)
                run = functools.partial(lambda make, work: read(make(path), work), make, work)
            else:
                run = functools.partial(read, ds, work)
            sides.append(Side(name, run, len(read_keys), nbytes))
        interleave(sides, reps)
        comparisons.append(Comparison(case, *sides))
    return comparisons


def measure_sequential(spec: FileSpec, records: Records, path: str, reps: int) -> list[Side]:
    """spec's file read front to back on one thread, interleaved with a numpy buffer copy.

    Returns the sides: Spelt with the default data-hash checks, Spelt without them,
    array-record (context), and last the memcpy. Spelt reads through the native source
    behind ``__getitems__``, whose thread count is not a public parameter (``__getitems__``
    uses os.cpu_count() threads). array-record's ``__getitems__`` reads the batch of one file
    on one thread (its thread pool gets one task per file).
    """
    chunks = [
        list(range(i, min(i + SEQUENTIAL_CHUNK, spec.num_records)))
        for i in range(0, spec.num_records, SEQUENTIAL_CHUNK)
    ]
    checked = spelt.sources.ArrayRecordDataSource(path)._spelt_native_source()  # noqa: SLF001
    unchecked = spelt.sources.ArrayRecordDataSource(
        path, reader_options={"verify_data_hash": "false"}
    )._spelt_native_source()  # noqa: SLF001
    array_record = ARDataSource(path)
    expected = [records[k] for k in chunks[0]]
    for name, first in [
        ("Spelt", checked.read_many(chunks[0], 1)),
        ("Spelt, no data hash", unchecked.read_many(chunks[0], 1)),
        ("array-record", array_record.__getitems__(chunks[0])),
    ]:
        assert list(first) == expected, f"{spec.label}: sequential read by {name} differs"

    def read_all(read_chunk: Callable[[list[int]], Any]) -> Callable[[], None]:
        def run() -> None:
            for chunk in chunks:
                read_chunk(chunk)  # dropped at once, as in _read_batched

        return run

    src = np.ones(MEMCPY_BYTES, np.uint8)  # both written, so no page faults while copying
    dst = np.ones_like(src)
    nbytes = int(records.sizes.sum())
    sides = [
        Side(
            "Spelt, 1 thread", read_all(lambda c: checked.read_many(c, 1)), spec.num_records, nbytes
        ),
        Side(
            "Spelt, 1 thread, data hash not checked",
            read_all(lambda c: unchecked.read_many(c, 1)),
            spec.num_records,
            nbytes,
        ),
        Side(
            "array-record __getitems__ (context)",
            read_all(array_record.__getitems__),
            spec.num_records,
            nbytes,
        ),
        Side(
            f"memcpy: numpy copy of {MEMCPY_BYTES >> 20} MiB",
            lambda: np.copyto(dst, src),
            0,
            MEMCPY_BYTES,
        ),
    ]
    interleave(sides, reps)
    return sides


def raise_malloc_thresholds() -> None:
    """Puts glibc's malloc into the state most numpy programs reach early, whatever ran before.

    glibc serves blocks of at least its mmap threshold (128 KiB at start) with mmap, and on
    freeing such a block raises the threshold to its size (at most 32 MiB) and the heap-trim
    threshold to twice that. Until then, batches of ~100 KiB records are freed back to the
    kernel and faulted in again, which slows both readers 1.8-3.5x. Freeing one 30 MiB array
    raises both thresholds near their maximum, so the figures no longer depend on what the
    process did before (the Grain bench, writing the files). ``fresh_process_batched``
    measures the other state.
    """
    block = np.ones(MALLOC_BUMP_BYTES, np.uint8)
    del block


def _child_batched(path: str, reps: int) -> None:
    """In a fresh interpreter: batched random reads of one file, both readers; prints JSON."""
    readers = {
        "Spelt": spelt.sources.ArrayRecordDataSource(path),
        "array-record": ARDataSource(path),
    }
    num_records = len(readers["Spelt"])
    keys = [int(k) for k in np.random.default_rng(SEED).permutation(num_records)]
    batches = [keys[i : i + BATCH_SIZE] for i in range(0, len(keys), BATCH_SIZE)]
    sides = [
        Side(name, functools.partial(_read_batched, ds, batches), num_records, 0)
        for name, ds in readers.items()
    ]
    interleave(sides, reps)
    print(json.dumps({side.name: {"seconds": side.seconds, "cores": side.cores} for side in sides}))


def fresh_process_batched(spec: FileSpec, records: Records, path: str, reps: int) -> Comparison:
    """spec's batched comparison in fresh interpreters (glibc's thresholds never raised).

    Each of reps children runs one warm-up and one measured repetition per reader
    (interleaved); a child allocates nothing large before measuring.
    """
    nbytes = int(records.sizes.sum())
    sides = {
        name: Side(name, lambda: None, spec.num_records, nbytes)
        for name in ("Spelt", "array-record")
    }
    for _ in range(reps):
        out = subprocess.run(
            [sys.executable, __file__, "--child", path], capture_output=True, text=True, check=True
        ).stdout
        for name, measured in json.loads(out.splitlines()[-1]).items():
            sides[name].seconds += measured["seconds"]
            sides[name].cores += measured["cores"]
    return Comparison(f"{spec.label}, batch {BATCH_SIZE}, fresh process", *sides.values())


# ---------------------------------------------------------------------------------------------
# Reporting.


def _spread(values: list[float]) -> str:
    """Median and spread, e.g. '612,345 (580,001-640,123)'."""
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def _cores(side: Side) -> str:
    """Median CPU time of the process over wall time: the cores a side kept busy."""
    return f"{statistics.median(side.cores):.2f}"


def print_table(columns: Sequence[str], rows: list[Sequence[str]]) -> None:
    widths = [max(len(row[k]) for row in [columns, *rows]) for k in range(len(columns))]
    for row in [columns, *rows]:
        print(
            f"{row[0]:<{widths[0]}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(row[1:], widths[1:]))
        )


def print_random(comparisons: list[Comparison]) -> None:
    print_table(
        (
            "case",
            "Spelt records/s: median (min-max)",
            "MB/s",
            "cores",
            "array-record records/s: median (min-max)",
            "MB/s",
            "cores",
            "Spelt/array-record",
        ),
        [
            (
                c.case,
                _spread(c.spelt.records_per_s()),
                f"{c.spelt.median_mb_per_s():,.0f}",
                _cores(c.spelt),
                _spread(c.array_record.records_per_s()),
                f"{c.array_record.median_mb_per_s():,.0f}",
                _cores(c.array_record),
                f"{c.ratio:.2f}x",
            )
            for c in comparisons
        ],
    )


def print_sequential(label: str, sides: list[Side]) -> None:
    memcpy = sides[-1].median_mb_per_s()
    print_table(
        (f"{label}, sequential", "records/s", "MB/s: median (min-max)", "cores", "memcpy/this"),
        [
            (
                side.name,
                f"{statistics.median(side.records_per_s()):,.0f}" if side.records else "",
                _spread(side.mb_per_s()),
                _cores(side),
                f"{memcpy / side.median_mb_per_s():.2f}x",
            )
            for side in sides
        ],
    )


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=REPS, help="measured repetitions per side")
    parser.add_argument(
        "--no-fresh",
        action="store_true",
        help="skip the batched 100 KiB reads in fresh interpreters",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)  # see fresh_process_batched
    args = parser.parse_args(argv)
    if args.child:
        _child_batched(args.child, reps=1)
        return
    sequential_spec = FILES[0]
    sequential_case = f"{sequential_spec.label}, sequential"
    run_sequential = args.k in sequential_case
    specs = [
        s
        for s in FILES
        if any(args.k in f"{s.label}, {mode}" for mode in ("ds[i]", f"batch {BATCH_SIZE}"))
        or (s is sequential_spec and run_sequential)
    ]
    if not specs:
        print(f"ArrayRecord bench: no case matches -k {args.k!r}; skipped")
        return

    print(
        f"\nArrayRecord: Spelt {spelt.__version__} vs array-record "
        f"{importlib.metadata.version('array-record')}, {os.cpu_count()} CPUs, {_load()}"
    )
    print(
        f"files in {DATA_DIR} (written by Spelt); {args.reps} repetitions per "
        f"side after one warm-up each, interleaved; batch {BATCH_SIZE}"
    )
    raise_malloc_thresholds()
    comparisons: list[Comparison] = []
    fresh: list[Comparison] = []
    sequential: list[Side] = []
    for spec in specs:
        records = Records(spec)
        path = ensure_file(spec, records)
        warmed = warm_page_cache(path)
        print(
            f"{spec.label}: {spec.num_records:,} records, {os.path.getsize(path) / 1e6:,.0f} MB "
            f"on disk, {warmed}; measuring"
        )
        comparisons += measure_random(spec, records, path, args.reps, args.k)
        fresh_case = f"{spec.label}, batch {BATCH_SIZE}, fresh process"
        if (
            not args.no_fresh
            and spec.record_size >= FRESH_MIN_RECORD_SIZE
            and spec.group_size == 1
            and args.k in fresh_case
        ):
            fresh.append(fresh_process_batched(spec, records, path, FRESH_REPS))
        if spec is sequential_spec and run_sequential:
            sequential = measure_sequential(spec, records, path, args.reps)

    if comparisons:
        print()
        print_random(comparisons)
        batched = [c for c in comparisons if "batch" in c.case]
        if batched:
            lowest = min(c.ratio for c in batched)
            verdict = "met" if lowest >= GOAL_BATCHED else "NOT met"
            print(
                f"\ngoal Spelt >= {GOAL_BATCHED:g}x array-record on batched random reads: "
                f"{verdict} (lowest ratio {lowest:.2f}x)"
            )
    if fresh:
        print(
            f"\nThe same batched reads in fresh interpreters ({FRESH_REPS} children, one warm-up "
            f"and one measured repetition per reader each; glibc's malloc thresholds at their "
            f"start values):"
        )
        print_random(fresh)
    if sequential:
        print()
        print_sequential(sequential_spec.label, sequential)
        factor = sequential[-1].median_mb_per_s() / sequential[0].median_mb_per_s()
        verdict = "met" if factor <= GOAL_MEMCPY else "NOT met"
        print(
            f"\ngoal Spelt sequential (1 thread, uncompressed, hashes checked) within "
            f"{GOAL_MEMCPY:g}x of memcpy: {verdict} (memcpy is {factor:.2f}x Spelt)"
        )
    print(f"end: {_load()}")


if __name__ == "__main__":
    main()
