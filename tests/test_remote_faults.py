"""Remote reads behind a fault-injecting proxy (tests/fault_proxy.py) in front of moto's S3
server: retries of throttling, server errors, resets and cut bodies; objects that change or
shrink under a reader; coalescing, the in-flight limit and read-ahead, counted at the proxy
(spelt._remote_reads, spelt/range_reads.h, io/sequential_reads.h)."""

import time

import pytest
import s3fs
import spelt as grain
from fault_proxy import FAULTS, FaultProxy
from s3_server import arrow_fs, bucket, endpoint, fsspec_fs  # noqa: F401  (fixtures)
from spelt import _remote_reads, array_record, tfrecord

RECORDS = [bytes([i % 251]) * (1000 + i * 97 % 20_000) for i in range(200)]


@pytest.fixture(scope="module")
def proxy(endpoint):
    p = FaultProxy(endpoint)
    yield p
    p.close()


@pytest.fixture(autouse=True)
def clean(proxy):
    """No fault or delay carries over; the flags are restored."""
    yield
    proxy.clear()
    for name, default in [("remote_max_in_flight", 256), ("remote_retry_seconds", 60)]:
        grain.config.update(name, default)


@pytest.fixture(params=["arrow", "s3fs"])
def client(request):
    """Makes a client of an endpoint whose own retries are off, so that Spelt's are tested."""
    make = arrow_fs if request.param == "arrow" else fsspec_fs
    return lambda endpoint: make(endpoint, retries=1)


def write_shard(endpoint, uri, records=RECORDS):
    with array_record.ArrayRecordWriter(
        uri, "group_size:1,uncompressed", filesystem=arrow_fs(endpoint)
    ) as w:
        for r in records:
            w.write(r)


@pytest.mark.parametrize("fault", FAULTS)
def test_transient_faults_are_retried_and_the_bytes_are_right(
    endpoint, proxy, bucket, client, fault
):
    uri = f"s3://{bucket}/shard"
    write_shard(endpoint, uri)
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=client(proxy.endpoint))
    before = _remote_reads.stats()
    proxy.inject(*[fault] * 3)  # more than the client's own retries
    keys = list(range(0, 200, 7))
    assert source.__getitems__(keys) == [RECORDS[k] for k in keys]
    assert source[5] == RECORDS[5]
    assert proxy.pending() == 0
    assert _remote_reads.stats().since(before).retries >= 3


def test_retries_stop_after_the_time_bound(endpoint, proxy, bucket, client):
    uri = f"s3://{bucket}/shard"
    write_shard(endpoint, uri)
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=client(proxy.endpoint))
    grain.config.update("remote_retry_seconds", 1)
    proxy.inject(*["503"] * 1000)
    start = time.monotonic()
    with pytest.raises(OSError, match=rf"cannot read '{uri}' at byte offset \d+: .*gave up after"):
        source[3]  # noqa: B018  pylint: disable=pointless-statement
    assert time.monotonic() - start < 5


def test_an_object_changed_between_reads_is_corrupt(endpoint, proxy, bucket, client):
    uri = f"s3://{bucket}/shard"
    write_shard(endpoint, uri)
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=client(proxy.endpoint))
    assert source[0] == RECORDS[0]
    time.sleep(1.1)  # S3's Last-Modified counts seconds (pyarrow sees no ETag)
    write_shard(endpoint, uri, [r[::-1] + b"!" for r in RECORDS[:-1]] + [RECORDS[-1][:-200]])
    proxy.inject("reset")  # the retry looks the object up again
    with pytest.raises(array_record.CorruptFileError, match=rf"{uri}: .*changed since it was"):
        source[100]  # noqa: B018  pylint: disable=pointless-statement


def test_an_object_that_shrank_is_corrupt_and_names_the_offset(endpoint, proxy, bucket, client):
    uri = f"s3://{bucket}/shard"
    write_shard(endpoint, uri)
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=client(proxy.endpoint))
    write_shard(endpoint, uri, RECORDS[:20])
    with pytest.raises(array_record.CorruptFileError, match=rf"{uri}: .*at byte offset \d+"):
        source.__getitems__([150, 199])


def test_a_range_past_the_size_is_corrupt_without_a_request():
    reader = _remote_reads.RangeReader("s3://b/k", 100, None, _no_read, _no_read)
    with pytest.raises(
        array_record.CorruptFileError, match="s3://b/k: .*byte offset 100: the object has 100"
    ):
        reader.read_ranges([(0, 10), (90, 20)])


def _no_read(*args):
    raise AssertionError("no request expected")


def test_the_in_flight_limit_holds_for_the_process(endpoint, proxy, bucket, client):
    uri = f"s3://{bucket}/big"
    write_shard(endpoint, uri, [bytes([i]) * 100_000 for i in range(64)])
    fs = client(proxy.endpoint)
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=fs)
    keys = list(range(0, 64, 2))  # 100 KB apart: one request each
    # s3fs's own pool holds 10 connections; pyarrow's client 25, so Spelt uses copies of it.
    for limit in (3, 8) if isinstance(fs, s3fs.S3FileSystem) else (3, 8, 30):
        grain.config.update("remote_max_in_flight", limit)
        source.__getitems__(keys)  # the threads start, each client opens the file
        proxy.clear()
        # Requests wait at the proxy until `limit` are in flight, or for 1 s (under the S3
        # client's 3 s read timeout, after which it would resend them): the peak shows whether
        # more than the limit were ever sent at once.
        proxy.hold_until(limit, timeout_s=1.0)
        assert source.__getitems__(keys) == [bytes([k]) * 100_000 for k in keys]
        # Every record read by its own request (a pool thread whose copy of the filesystem had
        # not opened the file yet also reads its footer: small ranges; a loaded machine may see
        # a request resent).
        assert sum(n >= 100_000 for n in proxy.range_lengths) >= len(keys)
        assert 2 <= proxy.peak_concurrent <= limit


def test_tfrecord_reads_ahead_in_large_ranges(endpoint, proxy, bucket, client):
    uri = f"s3://{bucket}/seq.tfrecord"
    records = [bytes([i % 256]) * 1024 for i in range(3000)]  # 3 MB
    with tfrecord.TFRecordWriter(uri, filesystem=arrow_fs(endpoint)) as w:
        for r in records:
            w.write(r)
    proxy.clear()
    ds = tfrecord.TFRecordIterDataset(uri, filesystem=client(proxy.endpoint))
    assert list(ds) == records
    # 3 MB in 1 MiB ranges (and the first bytes, read to detect compression); 256 KiB
    # requests would be 12.
    assert proxy.ranged_gets <= 5


def test_the_execution_summary_counts_remote_reads(endpoint, proxy, bucket):
    from spelt.experimental import (  # pylint: disable=import-outside-toplevel
        DatasetOptions,
        ExecutionTrackingMode,
        WithOptionsIterDataset,
    )

    uri = f"s3://{bucket}/shard"
    write_shard(endpoint, uri)
    source = grain.sources.ArrayRecordDataSource(
        uri, filesystem=arrow_fs(proxy.endpoint, retries=1)
    )
    proxy.inject("503")
    ds = grain.MapDataset.source(source).to_iter_dataset().batch(50)
    tracked = DatasetOptions(execution_tracking_mode=ExecutionTrackingMode.STAGE_TIMING)
    it = iter(WithOptionsIterDataset(ds, tracked))
    assert sum(len(b) for b in it) == len(RECORDS)
    remote = grain.experimental.get_execution_summary(it).remote_reads
    # 2.1 MB of neighbouring records: 1 MiB ranges, one sent twice.
    assert remote.bytes >= sum(map(len, RECORDS)) and remote.requests >= 4
    assert remote.retries >= 1 and remote.peak_in_flight >= 2
    table = str(grain.experimental.get_execution_summary(it))
    assert f"Remote reads: {remote.requests} requests" in table


def test_a_forked_child_reads_with_its_own_pool(endpoint, bucket):
    import multiprocessing  # pylint: disable=import-outside-toplevel

    uri = f"s3://{bucket}/shard"
    write_shard(endpoint, uri)
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=arrow_fs(endpoint))
    assert source.__getitems__([1, 2]) == RECORDS[1:3]  # the parent's pool has threads
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_read_in_child, (endpoint, uri)).get(timeout=60)
    assert got == RECORDS[3:6]


def _read_in_child(endpoint, uri):
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=arrow_fs(endpoint))
    return source.__getitems__([3, 4, 5])
