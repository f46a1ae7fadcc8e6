"""The native path (spelt._native_files, cpp/parquet_native/arrow_files.h): a pyarrow
filesystem, or a URI that pyarrow opens, is read and written by libspelt through Arrow C++
with no Python and no GIL; fsspec filesystems take the Python path (spelt._remote_reads). The
two paths count their requests apart, which tells which one read."""

import gc
import os
import pickle
import sys
import threading
import time

import spelt as grain
from fault_proxy import FaultProxy
from gcs_server import BUCKET, gcs, gcs_endpoint  # noqa: F401  (fixtures)
from s3_server import arrow_fs, aws_env, bucket, endpoint, fsspec_fs  # noqa: F401  (fixtures)
from spelt import _native_files, _remote_reads, array_record, tfrecord

RECORDS = [bytes([i % 251]) * (2000 + i * 131 % 30_000) for i in range(128)]


def native_requests():
    return _native_files.counters()[0]


def python_requests():
    return _remote_reads.stats().requests - native_requests()


def write_shard(uri, fs, records=RECORDS):
    with array_record.ArrayRecordWriter(uri, "group_size:1,uncompressed", filesystem=fs) as w:
        for r in records:
            w.write(r)


def requests_made(read):
    """(native requests, Python-path requests) that `read()` made, checking its result."""
    native, python = native_requests(), python_requests()
    read()
    return native_requests() - native, python_requests() - python


def test_a_pyarrow_filesystem_is_read_natively(endpoint, bucket):
    uri = f"s3://{bucket}/shard"
    write_shard(uri, arrow_fs(endpoint))
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=arrow_fs(endpoint))
    # Far apart, neighbours (coalesced into one range) and repeated keys (read in place once,
    # copied for the other).
    keys = [*range(0, 128, 9), 5, 5, 6, 7, 127, 64, 64]

    def read():
        assert source.__getitems__(keys) == [RECORDS[k] for k in keys]

    native, python = requests_made(read)
    assert native >= 1 and python == 0


def test_a_uri_that_pyarrow_opens_is_read_natively(endpoint, bucket, aws_env):
    uri = f"s3://{bucket}/seq.tfrecord"
    with tfrecord.TFRecordWriter(uri) as w:  # written natively too
        for r in RECORDS:
            w.write(r)
    native, python = requests_made(
        lambda: _check_equal(list(tfrecord.TFRecordIterDataset(uri)), RECORDS)
    )
    assert native >= 1 and python == 0


def test_a_tfrecord_source_detects_the_compression_from_its_index_scan(endpoint, bucket):
    """Opening a TFRecordDataSource reads the file's windows once: the compression is
    detected from the index scan's first bytes, not with a request of its own (a round trip)."""
    uri = f"s3://{bucket}/indexed.tfrecord"
    fs = arrow_fs(endpoint)
    with tfrecord.TFRecordWriter(uri, filesystem=fs) as w:
        for r in RECORDS:
            w.write(r)
    holder = []
    opened, _ = requests_made(
        lambda: holder.append(tfrecord.TFRecordDataSource(uri, filesystem=fs))
    )
    read_in_order, _ = requests_made(
        lambda: _check_equal(list(tfrecord.TFRecordIterDataset(uri, filesystem=fs)), RECORDS)
    )
    assert opened == read_in_order >= 1
    assert holder[0][127] == RECORDS[127]


def _check_equal(got, want):
    assert got == want


def test_one_filesystem_object_makes_one_native_client(endpoint, bucket):
    # Making a client waits for every S3 request in flight (Arrow's finalizer lock): sources and
    # writers over one filesystem object share the native files made for the first.
    fs, other = arrow_fs(endpoint), arrow_fs(endpoint)
    first = _native_files.capsule(fs, "S3FileSystem")
    assert first is not None
    assert _native_files.capsule(fs, "S3FileSystem") is first
    assert _native_files.capsule(other, "S3FileSystem") is not first
    write_shard(f"s3://{bucket}/shared", fs)
    source = grain.sources.ArrayRecordDataSource(f"s3://{bucket}/shared", filesystem=fs)
    assert source[3] == RECORDS[3]
    assert _native_files.capsule(fs, "S3FileSystem") is first
    held = len(_native_files._capsules)  # pylint: disable=protected-access
    del fs, source
    gc.collect()
    assert len(_native_files._capsules) == held - 1  # pylint: disable=protected-access


def test_an_fsspec_filesystem_takes_the_python_path(endpoint, bucket):
    uri = f"s3://{bucket}/shard"
    write_shard(uri, arrow_fs(endpoint))
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=fsspec_fs(endpoint))
    native, python = requests_made(lambda: _check_equal(source[7], RECORDS[7]))
    assert native == 0 and python >= 1


def test_without_the_native_module_the_python_path_reads(endpoint, bucket, monkeypatch):
    uri = f"s3://{bucket}/shard"
    write_shard(uri, arrow_fs(endpoint))
    monkeypatch.setattr(_native_files, "_native", None)  # as in a build without pyarrow
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=arrow_fs(endpoint))
    native, python = requests_made(lambda: _check_equal(source[7], RECORDS[7]))
    assert native == 0 and python >= 1


def test_a_pickled_source_reopens_natively(endpoint, bucket):
    uri = f"s3://{bucket}/shard"
    write_shard(uri, arrow_fs(endpoint))
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=arrow_fs(endpoint))
    copy = pickle.loads(pickle.dumps(source))  # as a worker process gets it
    native, python = requests_made(
        lambda: _check_equal(copy.__getitems__([1, 99]), [RECORDS[1], RECORDS[99]])
    )
    assert native >= 1 and python == 0


def test_reads_progress_while_another_thread_holds_the_gil(gcs):  # noqa: F811
    # The GCS emulator runs in its own process (moto's S3 server is a thread of this one and
    # needs the GIL to answer).
    uri = f"gs://{BUCKET}/gil"
    records = [bytes([i]) * 100_000 for i in range(32)]
    write_shard(uri, gcs, records)
    source = grain.sources.ArrayRecordDataSource(uri, filesystem=gcs)
    keys = list(range(0, 32, 2))  # 100 KB apart: a request each
    got = []
    start = native_requests()
    reader = threading.Thread(target=lambda: got.append(source.__getitems__(keys)))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(30)  # this thread keeps the GIL while it spins below
    try:
        reader.start()
        deadline = time.monotonic() + 10
        while native_requests() - start < len(keys) and time.monotonic() < deadline:
            pass  # holds the GIL: the Python path could not send a request meanwhile
        progressed = native_requests() - start
    finally:
        sys.setswitchinterval(interval)
    reader.join()
    assert progressed >= len(keys)  # every request went out and came back meanwhile
    assert got == [[records[k] for k in keys]]


def test_a_forked_child_counts_no_native_request_in_flight(endpoint, bucket):
    """A request in flight when the process forks never finishes in the child (its thread is
    not there), so the child's native count starts at 0, as the Python path's does."""
    uri = f"s3://{bucket}/shard"
    write_shard(uri, arrow_fs(endpoint))
    proxy = FaultProxy(endpoint)
    got = []
    reader = threading.Thread(target=lambda: got.append(source[5]))
    try:
        source = grain.sources.ArrayRecordDataSource(uri, filesystem=arrow_fs(proxy.endpoint))
        proxy.hold_until(2, timeout_s=30)  # the one next ranged GET waits until clear()
        reader.start()
        deadline = time.monotonic() + 30
        while _native_files.counters()[3] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _native_files.counters()[3] == 1
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report its count, exit at once
            os.write(write_end, str(_native_files.counters()[3]).encode())
            os._exit(0)
        os.close(write_end)
        in_child = os.read(read_end, 64).decode()
        os.close(read_end)
        assert os.waitpid(pid, 0)[1] == 0
        assert in_child == "0" and _native_files.counters()[3] == 1
    finally:
        proxy.clear()
        if reader.is_alive():
            reader.join()
        proxy.close()
    assert got == [RECORDS[5]] and _native_files.counters()[3] == 0
