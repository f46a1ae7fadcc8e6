"""Reads from and writes to an object store with a round trip (issue 21): O1-O4, and throughput
against the round-trip time.

Run alone with ``.venv/bin/python bench/bench_remote.py [-k PATTERN] [--reps N]``, or from
``bench/bench.py`` (``make bench``). The store is an S3 endpoint on loopback over a local
folder that answers every request after ``rtt`` (this machine's kernel lacks ``sch_netem``, so
the round trip is added by the server, not by ``tc netem`` on the wire): for reads nginx
(``nginx_s3.py``, installed by ``make bench``; ``static_s3.py`` where it is missing), for
writes (O4) ``static_s3.StaticS3``, in Python. Spelt reads and writes it through ``pyarrow.fs.S3FileSystem``, natively (Arrow C++ with
no GIL, spelt._native_files) and, for comparison in the same run, through the Python path that
an fsspec filesystem or a build without ``spelt._parquet_native`` takes (spelt._remote_reads).

**O1.** 1,024 records of 100 KiB in one ArrayRecord file (group_size 1, uncompressed).
One batch is ``__getitems__`` of 128 random keys. Compared: the local file; the bucket at
20 ms with the default in-flight limit (``spelt.config.remote_max_in_flight``, 256) and, runs
alternating with it, the same store at 0 ms (what the client's and the store's CPU carry: the
binding limit on a small machine), each through both paths; the concurrency bound
``min(local MB/s, in_flight x 100 KiB / rtt)``; and a per-record s3fs read loop
(``fs.cat_file`` per record, what a Grain user writes for a bucket today). The Dataset API
face: whole epochs of ``MapDataset.source(...).shuffle(seed).batch(128).to_iter_dataset()``
over a file of 8,192 such records (so that the batches read ahead hold a small part of an
epoch), locally and from the bucket at 0 and 20 ms. Goals: >= 0.7x the bound, >= 10x the s3fs
loop.

**Model.** The same batches at round trips of 0, 5, 10, 20 and 50 ms and in-flight limits of
16, 64 and 256, against ``min(local, in_flight x record / rtt)``.

**O2.** A shuffled ``DataLoader`` (``IndexSampler(shuffle=True)``, ``Batch(128)``,
``worker_count=0``, default ReadOptions) over the Dataset API face's file of 8,192 O1 records,
one epoch per run, from the bucket at 0 and 20 ms and from the local file. Goal: >= 0.5x the local
MB/s at 20 ms. The CPU that the loader and the store use at 0 ms is printed: where they fill
the machine's cores, the same loader at 0 ms is the binding limit.

**O3.** A TFRecord file of 1 KiB records (64 MiB) read front to back with
``TFRecordIterDataset`` locally and from the bucket at 0 and 20 ms through both paths (runs
alternating; 0 ms is the binding limit on a small machine), then natively at 20 ms with
read-ahead (``spelt.config.remote_read_ahead_mib``) 16 and 64 MiB (the default is 32). Goal:
>= 0.5x the local MB/s at 20 ms. Then ArrayRecord read in order
(``MapDataset.source(...).to_iter_dataset()`` over the 8,192-record file), locally and from
the bucket at 0 and 20 ms.

**O4.** ``spelt convert`` of a Parquet file (``O4_BYTES``: 256 MiB of rows of a 16 KiB binary
field and an int64 label; the issue's 1 GB scaled down for this machine's time) to 8 ArrayRecord
shards (default options, zstd:3), written locally and into the bucket at 20 ms. Goal: the
bucket within 1.5x of the local time.

Each figure is the median of ``--reps`` repetitions (min-max shown), after one warm-up. The
reader's CPU time per record (all its threads; the store runs in another process) is printed
for O1, since on a small machine the CPU, not the round trip, bounds the fast cases.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable

import pyarrow.fs as pafs
import spelt as grain
from spelt import _native_files, array_record, tfrecord
import nginx_s3
import proc_stats
from static_s3 import StoreProcess

RECORD = 100 * 1024
RECORDS = 1024
DATASET_API_RECORDS = 8192  # O1's Dataset API face: 800 MiB
BATCH = 128
TF_RECORD = 1024
TF_BYTES = 64 << 20
O4_BYTES = 256 << 20
O4_ROW = 16 * 1024


def _arrow(endpoint: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(
        access_key="bench",
        secret_key="bench",
        endpoint_override=endpoint,
        scheme="http",
        region="us-east-1",
    )


@contextlib.contextmanager
def _python_path():
    """Sources and writers opened inside read through the Python path (as with no native
    module), those opened outside natively."""
    saved = _native_files.native_module()
    _native_files._native = None  # pylint: disable=protected-access
    try:
        yield
    finally:
        _native_files._native = saved  # pylint: disable=protected-access


def _rate(fn: Callable[[], int], reps: int) -> list[float]:
    """MB/s of ``fn`` (which returns the bytes it read), one warm-up, then ``reps`` runs."""
    fn()
    rates = []
    for _ in range(reps):
        start = time.perf_counter()
        n = fn()
        rates.append(n / (time.perf_counter() - start) / 1e6)
    return rates


def _alternating(fns: dict[str, Callable[[], int]], reps: int) -> dict[str, list[float]]:
    """MB/s of each of ``fns`` (as _rate), one warm-up each, then ``reps`` rounds that run each
    once in turn, so that a change of the machine's load falls on all of them alike."""
    for fn in fns.values():
        fn()
    rates: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            start = time.perf_counter()
            n = fn()
            rates[name].append(n / (time.perf_counter() - start) / 1e6)
    return rates


def _show(name: str, rates: list[float], extra: str = "") -> float:
    median = statistics.median(rates)
    print(f"  {name:<44} {median:8.1f} MB/s ({min(rates):.1f}-{max(rates):.1f}){extra}")
    return median


def _batches(source, reps_keys: list[list[int]]) -> Callable[[], int]:
    it = iter(range(10**9))

    def run() -> int:
        keys = reps_keys[next(it) % len(reps_keys)]
        return sum(len(r) for r in source.__getitems__(keys))

    return run


def _o1_file(folder: str, key: str = "o1", records: int = RECORDS) -> str:
    """An O1 file of ``records`` in the store's folder (bucket "store"), written once."""
    local = os.path.join(folder, "store", key)
    if not os.path.exists(local):
        os.makedirs(os.path.join(folder, "store"), exist_ok=True)
        rng = random.Random(0)
        with array_record.ArrayRecordWriter(local, "group_size:1,uncompressed") as w:
            for _ in range(records):
                w.write(rng.randbytes(RECORD))
    return local


def o1_and_model(folder: str, reps: int, pattern: str) -> None:
    local = _o1_file(folder)
    rng = random.Random(1)
    keys = [rng.sample(range(RECORDS), BATCH) for _ in range(16)]
    print(f"O1: batches of {BATCH} random {RECORD // 1024} KiB records (ArrayRecord, group 1)")
    local_mb = _show(
        "local file", _rate(_batches(grain.sources.ArrayRecordDataSource(local), keys), reps)
    )
    expected = grain.sources.ArrayRecordDataSource(local).__getitems__(keys[0])
    default = grain.config.remote_max_in_flight
    if "O1" in pattern or not pattern:
        bound = min(local_mb, default * RECORD / 0.020 / 1e6)
        got = {}
        with _store(folder, 0.0) as zero, _store(folder, 0.020) as store:
            for path in ("Python path", "native"):
                with _python_path() if path == "Python path" else contextlib.nullcontext():
                    remote = {rtt: _remote_o1(s) for rtt, s in ((0, zero), (20, store))}
                for source in remote.values():
                    assert source.__getitems__(keys[0]) == expected
                cpu = time.process_time()
                rates = _alternating({rtt: _batches(s, keys) for rtt, s in remote.items()}, reps)
                cpu_us = (time.process_time() - cpu) / (2 * (reps + 1) * BATCH) * 1e6
                at_zero = _show(f"bucket, 0 ms, {path}", rates[0])
                got[path] = _show(f"bucket, 20 ms, in flight {default}, {path}", rates[20])
                # A batch waits one round trip at least, then carries its bytes as at 0 ms.
                one_trip = BATCH * RECORD / (BATCH * RECORD / (at_zero * 1e6) + 0.020) / 1e6
                print(
                    f"  -> 20 ms / 0 ms (the client's and the store's CPU, binding here)"
                    f" {got[path] / at_zero:.2f}x; / one round trip plus the 0 ms time"
                    f" ({one_trip:.0f} MB/s) {got[path] / one_trip:.2f}x"
                )
                print(
                    f"  (at most {store.stats()['peak']} requests at once at the 20 ms store so"
                    f" far; {cpu_us:.0f} us of the reader's CPU per record)"
                )
            # The Dataset API face: random batches read ahead, so that the next batches'
            # requests go out while one batch's answers come in; whole epochs of a file 8x as
            # large, so that the read-ahead (up to prefetch_buffer_size batches) does not hold
            # most of an epoch, whose reads would then be coalesced into a sequential read.
            big = _o1_file(folder, "o1_epoch", DATASET_API_RECORDS)
            remote = {rtt: _remote_o1(s, "o1_epoch") for rtt, s in ((0, zero), (20, store))}
            remote["local"] = grain.sources.ArrayRecordDataSource(big)
            rates = _alternating({k: _dataset_epoch(s) for k, s in remote.items()}, reps)
            _show("Dataset API, local file", rates["local"])
            api_zero = _show("Dataset API, bucket, 0 ms, native", rates[0])
            got["Dataset API"] = _show(
                f"Dataset API, bucket, 20 ms, in flight {default}, native", rates[20]
            )
            loop = _s3fs_loop(store.endpoint, keys[0])
        print(
            f"  {'bound min(local, in_flight x 100 KiB / 20 ms)':<44} {bound:8.1f} MB/s"
            f" -> Python path {got['Python path'] / bound:.2f}x, native"
            f" {got['native'] / bound:.2f}x, Dataset API {got['Dataset API'] / bound:.2f}x the"
            f" bound (goal 0.7x); Dataset API at 20 ms / 0 ms {got['Dataset API'] / api_zero:.2f}x"
        )
        got = got["native"]
        print(
            f"  {'s3fs cat_file per record, 20 ms':<44} {loop:8.1f} MB/s"
            f" -> Spelt {got / loop:.1f}x (goal 10x)"
        )
    if "model" in pattern or not pattern:
        print("Model: MB/s of the same batches against the round trip [bound]")
        for rtt_ms in (0, 5, 10, 20, 50):
            with _store(folder, rtt_ms / 1000) as store:
                remote = _remote_o1(store)
                for in_flight in (16, 64, 256):
                    grain.config.update("remote_max_in_flight", in_flight)
                    bound = min(local_mb, in_flight * RECORD / max(rtt_ms, 1e-9) * 1e3 / 1e6)
                    rates = _rate(_batches(remote, keys), max(2, reps // 2))
                    _show(f"rtt {rtt_ms} ms, in flight {in_flight}", rates, f" [{bound:.0f}]")
        grain.config.update("remote_max_in_flight", default)


@contextlib.contextmanager
def _store(folder: str, rtt_s: float, writes: bool = False):
    """The store of the read cases: nginx where installed (nginx_s3.py; ``make bench`` installs
    it), else static_s3 in its own process, which the writes (O4) always use."""
    if writes or not nginx_s3.available():
        store = StoreProcess(folder, rtt_s)
    else:
        store = nginx_s3.NginxStore(folder, rtt_s)
    try:
        yield store
    finally:
        store.close()


def _remote_o1(store, key: str = "o1"):
    return grain.sources.ArrayRecordDataSource(
        f"s3://store/{key}", filesystem=_arrow(store.endpoint)
    )


def _dataset_epoch(source) -> Callable[[], int]:
    """One epoch of ``MapDataset.source(source).shuffle(seed).batch(BATCH).to_iter_dataset()``
    (default ReadOptions: about 500 records of batches read ahead), a new seed each run."""
    seeds = iter(range(10**9))

    def run() -> int:
        ds = grain.MapDataset.source(source).shuffle(seed=next(seeds)).batch(BATCH)
        return sum(batch.nbytes for batch in ds.to_iter_dataset())

    return run


def _s3fs_loop(endpoint: str, keys: list[int]) -> float:
    """MB/s of reading ``keys`` of the O1 file one record at a time with s3fs (offsets from
    the index, as a user's loop over ``fs.cat_file`` would get them)."""
    import s3fs  # pylint: disable=import-outside-toplevel

    fs = s3fs.S3FileSystem(
        key="bench", secret="bench", client_kwargs={"endpoint_url": f"http://{endpoint}"}
    )
    size = RECORD
    start = time.perf_counter()
    for k in keys[:32]:  # 32 records at 20 ms each: enough for a rate
        fs.cat_file("store/o1", start=k * size, end=(k + 1) * size)
    return 32 * size / (time.perf_counter() - start) / 1e6


def o2(folder: str, reps: int) -> None:
    local = _o1_file(folder, "o1_epoch", DATASET_API_RECORDS)
    print(f"O2: shuffled DataLoader, batches of {BATCH}, 0 workers, over the O1 epoch file")
    seeds = iter(range(10**9))

    def epoch(source) -> Callable[[], int]:
        def run() -> int:
            sampler = grain.samplers.IndexSampler(
                num_records=len(source),
                shard_options=grain.sharding.NoSharding(),
                shuffle=True,
                num_epochs=1,
                seed=next(seeds),
            )
            loader = grain.DataLoader(
                data_source=source,
                sampler=sampler,
                operations=[grain.transforms.Batch(BATCH)],
                worker_count=0,
            )
            return sum(batch.nbytes for batch in loader)

        return run

    local_mb = _show("local file", _rate(epoch(grain.sources.ArrayRecordDataSource(local)), reps))
    got = {}
    with _store(folder, 0.0) as zero, _store(folder, 0.020) as store:
        with _python_path():
            python_remote = _remote_o1(store, "o1_epoch")
        for path, remote in [
            ("Python path", python_remote),
            ("native", _remote_o1(store, "o1_epoch")),
        ]:
            got[path] = _show(f"bucket, 20 ms, {path}", _rate(epoch(remote), reps))
            print(f"  (at most {store.stats()['peak']} requests at once at the store so far)")
        cpu = (time.process_time(), proc_stats.cpu_seconds(zero.pid), time.perf_counter())
        at_zero = _show("bucket, 0 ms, native", _rate(epoch(_remote_o1(zero, "o1_epoch")), reps))
        wall = time.perf_counter() - cpu[2]
        print(
            f"  (at 0 ms the loader used {(time.process_time() - cpu[0]) / wall:.2f} cores and"
            f" the store {(proc_stats.cpu_seconds(zero.pid) - cpu[1]) / wall:.2f} of the"
            f" machine's {os.cpu_count()}: the CPU binds)"
        )
    bound = min(local_mb, grain.config.remote_max_in_flight * RECORD / 0.020 / 1e6)
    print(
        f"  -> at 20 ms: Python path {got['Python path'] / local_mb:.2f}x, native"
        f" {got['native'] / local_mb:.2f}x the local file (goal 0.5x); native"
        f" {got['native'] / bound:.2f}x min(local, in_flight x 100 KiB / 20 ms) = {bound:.0f} MB/s,"
        f" {got['native'] / at_zero:.2f}x the same store at 0 ms"
    )


def o3(folder: str, reps: int) -> None:
    os.makedirs(os.path.join(folder, "store"), exist_ok=True)
    local = os.path.join(folder, "store", "o3.tfrecord")
    with tfrecord.TFRecordWriter(local) as w:
        record = b"r" * TF_RECORD
        for _ in range(TF_BYTES // TF_RECORD):
            w.write(record)
    print(f"O3: TFRecordIterDataset over {TF_BYTES >> 20} MiB of {TF_RECORD} B records")

    steady: dict[str, list[float]] = {}  # MB/s from the first record on (start-up apart)

    def read(path, fs=None, name: str = "") -> Callable[[], int]:
        def run() -> int:
            records = iter(tfrecord.TFRecordIterDataset(path, filesystem=fs))
            first = len(next(records))  # the open and the first window: start-up
            start = time.perf_counter()
            rest = sum(len(r) for r in records)
            steady.setdefault(name, []).append(rest / (time.perf_counter() - start) / 1e6)
            return first + rest

        return run

    default = grain.config.remote_read_ahead_mib
    with _store(folder, 0.0) as zero, _store(folder, 0.020) as store:
        cases = {"local file": read(local, name="local file")}
        for path in ("Python path", "native"):
            for rtt, s in ((0, zero), (20, store)):
                name = f"bucket, {rtt} ms, read-ahead {default} MiB, {path}"
                remote = read("s3://store/o3.tfrecord", _arrow(s.endpoint), name)
                if path == "Python path":  # each run opens the file: through the Python path
                    remote = _through_python_path(remote)
                cases[name] = remote
        rates = {name: _show(name, r) for name, r in _alternating(cases, reps).items()}
        print("  steady state (from the first record on):")
        steady_mb = {name: _show(name, r[1:]) for name, r in steady.items()}  # [0]: the warm-up
        local_mb = rates["local file"]
        for path in ("Python path", "native"):
            zero_mb = rates[f"bucket, 0 ms, read-ahead {default} MiB, {path}"]
            got = rates[f"bucket, 20 ms, read-ahead {default} MiB, {path}"]
            # Each run opens the file: two round trips (the lookup, the first window) at least,
            # then its bytes as at 0 ms.
            opened = TF_BYTES / (TF_BYTES / (zero_mb * 1e6) + 0.040) / 1e6
            steady_20 = steady_mb[f"bucket, 20 ms, read-ahead {default} MiB, {path}"]
            steady_0 = steady_mb[f"bucket, 0 ms, read-ahead {default} MiB, {path}"]
            print(
                f"  -> {path} at 20 ms: {got / local_mb:.2f}x the local file (goal 0.5x),"
                f" {got / zero_mb:.2f}x the same store at 0 ms (the binding limit here);"
                f" / two round trips plus the 0 ms time ({opened:.0f} MB/s) {got / opened:.2f}x;"
                f" steady state {steady_20 / steady_0:.2f}x the same store's at 0 ms"
            )
        remote = read("s3://store/o3.tfrecord", _arrow(store.endpoint))
        for mib in (16, 64):
            grain.config.update("remote_read_ahead_mib", mib)
            _show(f"bucket, 20 ms, read-ahead {mib} MiB, native", _rate(remote, reps))
        grain.config.update("remote_read_ahead_mib", default)

        # ArrayRecord read in order: no sequential reader, the engine's chunks (several in
        # flight) with neighbouring records coalesced into ranges.
        big = _o1_file(folder, "o1_epoch", DATASET_API_RECORDS)
        print(f"  ArrayRecord read in order, {DATASET_API_RECORDS} records of 100 KiB, native:")
        sources = {rtt: _remote_o1(s, "o1_epoch") for rtt, s in ((0, zero), (20, store))}
        sources["local"] = grain.sources.ArrayRecordDataSource(big)
        epochs = {
            k: (lambda src=src: sum(len(r) for r in grain.MapDataset.source(src).to_iter_dataset()))
            for k, src in sources.items()
        }
        rates = _alternating(epochs, reps)
        local_mb = _show("local file", rates["local"])
        zero_mb = _show("bucket, 0 ms", rates[0])
        got = _show("bucket, 20 ms", rates[20])
        print(
            f"  -> at 20 ms: {got / local_mb:.2f}x the local file (no goal of its own; O3's is"
            f" 0.5x), {got / zero_mb:.2f}x the same store at 0 ms"
        )


def _through_python_path(fn: Callable[[], int]) -> Callable[[], int]:
    def run() -> int:
        with _python_path():
            return fn()

    return run


def o4(folder: str, reps: int) -> None:
    import pyarrow as pa  # pylint: disable=import-outside-toplevel
    import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel

    from spelt import cli  # pylint: disable=import-outside-toplevel

    parquet = os.path.join(folder, "o4.parquet")
    rows = O4_BYTES // O4_ROW
    rng = random.Random(4)
    with pq.ParquetWriter(parquet, pa.schema([("data", pa.binary()), ("label", pa.int64())])) as w:
        for start in range(0, rows, 4096):
            n = min(4096, rows - start)
            data = pa.array([rng.randbytes(O4_ROW) for _ in range(n)], pa.binary())
            w.write_table(pa.table({"data": data, "label": pa.array(range(start, start + n))}))
    size = os.path.getsize(parquet)
    print(f"O4: spelt convert of {size / 2**20:.0f} MiB of Parquet ({rows} rows) to 8 shards")

    runs = iter(range(10**9))
    outputs = []

    def convert(output: str) -> Callable[[], int]:
        def run() -> int:  # a new prefix each time, as a new dataset is written
            out, err = io.StringIO(), io.StringIO()  # the summary and the progress bar
            outputs.append(f"{output}{next(runs)}")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(["convert", parquet, "-o", outputs[-1], "--num-shards", "8"])
            assert code == 0, err.getvalue()
            return size

        return run

    local_mb = _show("local folder", _rate(convert(os.path.join(folder, "out", "o4-")), reps))
    last = os.path.join(folder, "out-last")  # the last local conversion's files alone
    os.makedirs(last)
    prefix = os.path.basename(outputs[-1])
    for name in os.listdir(os.path.dirname(outputs[-1])):
        if name.startswith(f"{prefix}-") or name.startswith(f"{prefix}."):
            os.link(os.path.join(os.path.dirname(outputs[-1]), name), os.path.join(last, name))
    with _store(folder, 0.020, writes=True) as store, _aws_env(store.endpoint):
        # What the store takes in, apart from converting: pyarrow uploading a local
        # conversion's files (the shards, the manifest) to the bucket, Spelt not involved.
        def upload() -> int:
            pafs.copy_files(
                last,
                f"store/o4/copy-{next(runs)}",
                source_filesystem=pafs.LocalFileSystem(),
                destination_filesystem=_arrow(store.endpoint),
            )
            return size

        upload_mb = _show("pyarrow upload of a local conversion, 20 ms", _rate(upload, reps))
        python_convert = convert("s3://store/o4/python-")

        def python_path():
            with _python_path():
                return python_convert()

        python_mb = _show("bucket, 20 ms, Python path", _rate(python_path, reps))
        got = _show("bucket, 20 ms, native", _rate(convert("s3://store/o4/train-"), reps))
        requests = store.stats()["requests"]
    print(
        f"  -> the bucket takes: Python path {local_mb / python_mb:.2f}x, native"
        f" {local_mb / got:.2f}x the local time (goal 1.5x; {requests} requests at the store);"
        f" the upload alone takes {local_mb / upload_mb:.2f}x, converting locally then uploading"
        f" {local_mb / upload_mb + 1:.2f}x"
    )


@contextlib.contextmanager
def _aws_env(endpoint: str):
    """The AWS environment variables pointed at ``endpoint`` (s3:// URIs resolve to it)."""
    env = {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_ENDPOINT_URL": f"http://{endpoint}",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    reads = "nginx (nginx_s3.py)" if nginx_s3.available() else "static_s3.py (no nginx here)"
    print(f"bench_remote (load average {os.getloadavg()[0]:.1f}; reads served by {reads})")
    with tempfile.TemporaryDirectory() as folder:
        if any(k in args.k for k in ("O1", "model")) or not args.k:
            o1_and_model(folder, args.reps, args.k)
        if "O2" in args.k or not args.k:
            o2(folder, args.reps)
        if "O3" in args.k or not args.k:
            o3(folder, args.reps)
        if "O4" in args.k or not args.k:
            o4(folder, args.reps)


if __name__ == "__main__":
    main()
