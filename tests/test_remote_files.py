"""ArrayRecord and TFRecord files read from and written to an S3-compatible server (moto's,
started on loopback by these tests) through pyarrow.fs.S3FileSystem and through fsspec
(s3fs), and the CLI's convert / inspect on a bucket (spelt._file_system)."""

import io
import pickle
import random
import subprocess
import sys
import textwrap

import pytest
import spelt as grain
import pyarrow.fs as pafs
from s3_server import arrow_fs, aws_env, bucket, endpoint, fsspec_fs  # noqa: F401  (fixtures)
from spelt import array_record, cli, tfrecord

RECORDS = [bytes([i % 251]) * (i * 37 % 3000) + str(i).encode() for i in range(300)]


@pytest.fixture(params=["arrow", "s3fs"])
def fs(request, endpoint):
    return arrow_fs(endpoint) if request.param == "arrow" else fsspec_fs(endpoint)


def write_array_record(path, records, options, filesystem=None):
    with array_record.ArrayRecordWriter(path, options, filesystem=filesystem) as w:
        for r in records:
            w.write(r)


@pytest.mark.parametrize("options", ["group_size:1,uncompressed", "group_size:8,zstd:3"])
def test_array_record_shards_read_as_the_local_files_do(tmp_path, fs, bucket, options):
    halves = [RECORDS[:150], RECORDS[150:]]
    for i, half in enumerate(halves):
        write_array_record(f"s3://{bucket}/train-{i:05d}-of-00002", half, options, fs)
        write_array_record(str(tmp_path / f"train-{i:05d}-of-00002"), half, options)
    local = grain.sources.ArrayRecordDataSource(str(tmp_path / "train@2"))
    for spec in [f"s3://{bucket}/train@2", f"s3://{bucket}/train-*"]:
        remote = grain.sources.ArrayRecordDataSource(spec, filesystem=fs)
        assert remote.paths == [f"s3://{bucket}/train-0000{i}-of-00002" for i in range(2)]
        assert len(remote) == len(local) == len(RECORDS)
        keys = random.Random(0).sample(range(len(RECORDS)), 100)
        assert remote.__getitems__(keys) == local.__getitems__(keys) == [RECORDS[k] for k in keys]
        assert [remote[k] for k in (0, 149, 150, 299)] == [RECORDS[k] for k in (0, 149, 150, 299)]
    info = array_record.info(f"s3://{bucket}/train-00001-of-00002", fs)
    assert info["num_records"] == 150
    assert info["path"] == f"s3://{bucket}/train-00001-of-00002"


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_tfrecord_files_read_as_the_local_files_do(tmp_path, fs, bucket, compression):
    uri = f"s3://{bucket}/data.tfrecord"
    with tfrecord.TFRecordWriter(uri, compression, filesystem=fs) as w:
        for r in RECORDS:
            w.write(r)
    assert tfrecord.detect_compression(uri, fs) == compression
    ds = tfrecord.TFRecordIterDataset(uri, filesystem=fs)
    assert list(ds) == RECORDS
    it = iter(ds)
    for _ in range(100):
        next(it)
    state = it.get_state()
    it2 = iter(pickle.loads(pickle.dumps(ds)))
    it2.set_state(state)
    assert list(it2) == RECORDS[100:]
    assert list(ds.map(len)) == [len(r) for r in RECORDS]  # the engine's node
    if not compression:
        source = tfrecord.TFRecordDataSource([uri], filesystem=fs)
        keys = random.Random(1).sample(range(len(RECORDS)), 50) + list(range(10, 30))
        assert source.__getitems__(keys) == [RECORDS[k] for k in keys]
        assert pickle.loads(pickle.dumps(source))[7] == RECORDS[7]


def shuffled_batches(source):
    return (
        grain.MapDataset.source(source)
        .seed(7)
        .shuffle()
        .map(len)
        .batch(16)
        .to_iter_dataset(grain.ReadOptions(num_threads=4, prefetch_buffer_size=8))
    )


def test_checkpoint_restore_over_a_bucket(bucket, endpoint):
    fs = arrow_fs(endpoint)
    write_array_record(f"s3://{bucket}/ck-00000-of-00001", RECORDS, "group_size:4", fs)
    source = grain.sources.ArrayRecordDataSource(f"s3://{bucket}/ck@1", filesystem=fs)
    it = iter(shuffled_batches(source))
    for _ in range(5):
        next(it)
    state = it.get_state()
    rest = [b.tolist() for b in it]
    restored = iter(shuffled_batches(pickle.loads(pickle.dumps(source))))
    restored.set_state(state)
    assert [b.tolist() for b in restored] == rest
    everything = sorted(x for b in shuffled_batches(source) for x in b.tolist())
    assert everything == sorted(len(r) for r in RECORDS)


def test_a_data_loader_with_workers_reopens_the_bucket(bucket, endpoint):
    fs = arrow_fs(endpoint)
    write_array_record(f"s3://{bucket}/w", RECORDS[:64], "group_size:1", fs)
    source = grain.sources.ArrayRecordDataSource(f"s3://{bucket}/w", filesystem=fs)
    loader = grain.DataLoader(
        data_source=source,
        sampler=grain.samplers.IndexSampler(64, shuffle=False, num_epochs=1, seed=0),
        worker_count=1,
    )
    assert list(loader) == RECORDS[:64]


def test_a_missing_bucket_or_object_is_named(fs, bucket):
    for uri in ["s3://no-such-bucket/x", f"s3://{bucket}/missing"]:
        with pytest.raises((FileNotFoundError, OSError)) as e:
            grain.sources.ArrayRecordDataSource(uri, filesystem=fs)
        assert repr(uri) in str(e.value)


def test_wrong_credentials_are_named(bucket, endpoint):
    from moto.core.authorization import enable_iam_authentication

    uri = f"s3://{bucket}/x"
    write_array_record(uri, RECORDS[:3], "", arrow_fs(endpoint))
    with enable_iam_authentication():
        with pytest.raises(OSError, match="credentials") as e:
            grain.sources.ArrayRecordDataSource(uri, filesystem=arrow_fs(endpoint, key="wrong"))
    assert repr(uri) in str(e.value)
    assert "ACCESS_DENIED" in str(e.value)  # the library's own words


def test_a_failed_remote_write_leaves_no_object(fs, bucket):
    uri = f"s3://{bucket}/partial"
    with pytest.raises(RuntimeError, match="stop"):
        with array_record.ArrayRecordWriter(uri, filesystem=fs) as w:
            w.write(b"x" * 100)
            raise RuntimeError("stop")
    assert not arrow_fs_of(fs).get_file_info(f"{bucket}/partial").is_file


@pytest.mark.parametrize("megabytes", [1, 12])  # one PutObject; a multipart upload begun
def test_a_writer_left_open_at_exit_neither_hangs_nor_leaves_an_object(endpoint, bucket, megabytes):
    # pyarrow finalizes S3 at exit before the interpreter frees the writer; Arrow's destructor
    # of the unclosed stream then waited forever for its upload.
    script = textwrap.dedent(
        f"""
        import os
        import pyarrow.fs as pafs
        from spelt import array_record
        fs = pafs.S3FileSystem(access_key="testing", secret_key="testing", scheme="http",
                               endpoint_override="{endpoint}", region="us-east-1")
        w = array_record.ArrayRecordWriter("s3://{bucket}/open", filesystem=fs)
        for _ in range({megabytes}):
            w.write(os.urandom(1 << 20))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], timeout=120, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert not arrow_fs(endpoint).get_file_info(f"{bucket}/open").is_file


def arrow_fs_of(fs):
    return fs if isinstance(fs, pafs.S3FileSystem) else pafs.PyFileSystem(pafs.FSSpecHandler(fs))


def test_convert_writes_into_the_bucket_and_inspect_reads_it(
    tmp_path, bucket, endpoint, aws_env, monkeypatch, capsys
):
    import numpy as np

    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "data.npz", x=np.arange(10))
    prefix = f"s3://{bucket}/conv/x"
    assert cli.main(["convert", "data.npz", "-o", prefix, "--num-shards", "2"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.npz"]  # nothing local
    listed = sorted(
        i.base_name for i in arrow_fs(endpoint).get_file_info(pafs.FileSelector(f"{bucket}/conv"))
    )
    assert listed == ["x-00000-of-00002", "x-00001-of-00002", "x.manifest.json"]
    remote = grain.sources.ArrayRecordDataSource(f"{prefix}@2")
    assert [int(np.load(io.BytesIO(r))["x"]) for r in remote] == list(range(10))
    capsys.readouterr()
    assert cli.main(["inspect", "--verify", f"{prefix}@2"]) == 0
    out = capsys.readouterr().out
    assert f"{prefix}-00001-of-00002" in out and "hashes match" in out
    # Rerunning refuses to overwrite what is in the bucket; --overwrite replaces it.
    assert cli.main(["convert", "data.npz", "-o", prefix, "--num-shards", "2"]) == 1
    assert "the output exists" in capsys.readouterr().err
    np.savez(tmp_path / "data.npz", x=np.arange(10, 15))
    assert cli.main(["convert", "data.npz", "-o", prefix, "--overwrite"]) == 0
    remote = grain.sources.ArrayRecordDataSource(f"{prefix}@1")
    assert [int(np.load(io.BytesIO(r))["x"]) for r in remote] == list(range(10, 15))


def test_convert_reads_inputs_from_the_bucket_as_from_a_folder(
    tmp_path, bucket, endpoint, aws_env, capsys
):
    import json

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "in"
    folder.mkdir()
    np.save(folder / "a.npy", np.arange(12).reshape(6, 2))
    np.savez(folder / "b.npz", x=np.arange(3), y=np.ones((3, 2)))
    pq.write_table(pa.table({"v": [1.5, 2.5], "s": ["p", "q"]}), folder / "c.parquet")
    (folder / "d.jsonl").write_text("".join(json.dumps({"k": i}) + "\n" for i in range(4)))
    (folder / "e.csv").write_text("h1,h2\n1,x\n2,y\n")
    with tfrecord.TFRecordWriter(str(folder / "f.tfrecord"), "GZIP") as w:
        for r in RECORDS[:5]:
            w.write(r)
    remote = arrow_fs(endpoint)
    for path in sorted(folder.iterdir()):
        with remote.open_output_stream(f"{bucket}/in/{path.name}") as f:
            f.write(path.read_bytes())
    assert cli.main(["convert", str(folder), "-o", str(tmp_path / "local"), "--allow-mixed"]) == 0
    for argument in [f"s3://{bucket}/in/", f"s3://{bucket}/in/*"]:
        out = str(tmp_path / "from_bucket")
        assert cli.main(["convert", argument, "-o", out, "--allow-mixed", "--overwrite"]) == 0
        got = list(grain.sources.ArrayRecordDataSource(out + "@1"))
        assert got == list(grain.sources.ArrayRecordDataSource(str(tmp_path / "local@1")))
        assert len(got) == 6 + 3 + 2 + 4 + 2 + 5
    capsys.readouterr()
    assert cli.main(["convert", f"s3://{bucket}/nothing", "-o", str(tmp_path / "x")]) == 1
    assert f"s3://{bucket}/nothing: no such object" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["array_record", "tfrecord"])
def test_a_batch_of_records_coalesces_into_few_requests(kind):
    from fsspec.implementations.memory import MemoryFileSystem

    class Counting(MemoryFileSystem):
        ranges: list[tuple[int, int]] = []

        def cat_file(self, path, start=None, end=None, **kwargs):
            self.ranges.append((start, end))
            return super().cat_file(path, start, end, **kwargs)

    fs = Counting(skip_instance_cache=True)
    uri = f"memory://batch/{kind}"
    records = RECORDS + [b"x" * 100_000] * 20 + RECORDS  # 2 MB apart at most
    if kind == "array_record":
        write_array_record(uri, records, "group_size:1,uncompressed", fs)
        source = grain.sources.ArrayRecordDataSource(uri, filesystem=fs)
    else:
        with tfrecord.TFRecordWriter(uri, filesystem=fs) as w:
            for r in records:
                w.write(r)
        source = tfrecord.TFRecordDataSource(uri, filesystem=fs)
    # Records 3 apart (within 64 KiB of each other) share a request of at most 1 MiB.
    keys = list(range(0, 300, 3))
    Counting.ranges.clear()
    assert source.__getitems__(keys) == [records[k] for k in keys]
    assert len(Counting.ranges) == 1
    keys = [0, 300, 310, 320, 619]  # records 100 KB or more apart: one request each
    Counting.ranges.clear()
    assert source.__getitems__(keys) == [records[k] for k in keys]
    assert len(Counting.ranges) == len(keys)


def test_parquet_sources_read_from_the_bucket(fs, bucket, endpoint):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"x": list(range(50)), "s": [str(i) for i in range(50)]})
    pq.write_table(table, f"{bucket}/d.parquet", filesystem=arrow_fs(endpoint), row_group_size=8)
    expected = [{"x": i, "s": str(i)} for i in range(50)]
    for path in [f"s3://{bucket}/d.parquet", f"{bucket}/d.parquet"]:
        source = grain.experimental.ParquetDataSource(path, filesystem=fs)
        assert [source[i] for i in range(len(source))] == expected
        source = pickle.loads(pickle.dumps(source))  # reopens in a worker
        assert source[49] == expected[49]
        assert list(grain.experimental.ParquetIterDataset(path, filesystem=fs)) == expected


@pytest.mark.parametrize("read_ahead_mib,windows", [(0, 2), (16, 3)])
def test_a_sequential_reader_keeps_its_read_ahead_in_flight(read_ahead_mib, windows):
    """TFRecordIterDataset reads a remote file in windows of 8 MiB (1 MiB requests each), with
    as many windows after the current one in flight as spelt.config.remote_read_ahead_mib
    covers (at least one); no more start while the consumer stays in the first window."""
    import threading
    import time

    from fsspec.implementations.memory import MemoryFileSystem

    class Counting(MemoryFileSystem):
        ranges: list[tuple[int, int]] = []
        lock = threading.Lock()

        def cat_file(self, path, start=None, end=None, **kwargs):
            with self.lock:
                self.ranges.append((start, end))
            return super().cat_file(path, start, end, **kwargs)

    fs = Counting(skip_instance_cache=True)
    uri = f"memory://ahead/{read_ahead_mib}.tfrecord"
    records = [bytes([i % 251]) * (64 << 10) for i in range(600)]  # 37.5 MiB: 5 windows
    with tfrecord.TFRecordWriter(uri, filesystem=fs) as w:
        for r in records:
            w.write(r)
    grain.config.update("remote_read_ahead_mib", read_ahead_mib)
    try:
        Counting.ranges.clear()
        it = iter(tfrecord.TFRecordIterDataset(uri, filesystem=fs))
        assert next(it) == records[0]
        wanted = windows * 8  # the current window and those ahead, 8 requests each
        deadline = time.monotonic() + 30
        while len(Counting.ranges) <= wanted and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # time for one window too many
        got = sorted(r for r in Counting.ranges if r != (0, 12))  # (0, 12): the header check
        assert got == [(i << 20, (i + 1) << 20) for i in range(wanted)]
        assert list(it) == records[1:]
    finally:
        grain.config.update("remote_read_ahead_mib", 32)
