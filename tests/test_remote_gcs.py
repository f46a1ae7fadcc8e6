"""ArrayRecord and TFRecord files written to and read from a GCS emulator (gs:// URIs through
pyarrow.fs.GcsFileSystem, natively, and through gcsfs, the Python path; the emulator is started
on loopback by these tests): the same records as local files, listing (globs, name@N),
pickling and a restored checkpoint."""

import pickle
import random

import spelt as grain
from gcs_server import BUCKET, gcs, gcs_endpoint, gcsfs_fs  # noqa: F401  (fixtures)
from spelt import _native_files, _remote_reads, array_record, tfrecord

RECORDS = [bytes([i % 251]) * (i * 37 % 3000) + str(i).encode() for i in range(300)]


def test_array_record_shards_on_gcs(gcs):  # noqa: F811
    for i, half in enumerate([RECORDS[:150], RECORDS[150:]]):
        uri = f"gs://{BUCKET}/ar/train-{i:05d}-of-00002"
        with array_record.ArrayRecordWriter(uri, "group_size:4,zstd:3", filesystem=gcs) as w:
            for r in half:
                w.write(r)
    for spec in [f"gs://{BUCKET}/ar/train@2", f"gs://{BUCKET}/ar/train-*"]:
        source = grain.sources.ArrayRecordDataSource(spec, filesystem=gcs)
        assert source.paths == [f"gs://{BUCKET}/ar/train-0000{i}-of-00002" for i in range(2)]
        keys = random.Random(0).sample(range(len(RECORDS)), 100)
        assert source.__getitems__(keys) == [RECORDS[k] for k in keys]
    source = pickle.loads(pickle.dumps(source))  # reopens by URI
    loader = grain.DataLoader(
        data_source=source,
        sampler=grain.samplers.IndexSampler(
            len(RECORDS), grain.sharding.NoSharding(), shuffle=True, num_epochs=1, seed=3
        ),
        worker_count=0,
    )
    it = iter(loader)
    first = [next(it) for _ in range(120)]
    state = it.get_state()
    rest = list(it)
    assert sorted(first + rest) == sorted(RECORDS)
    it = iter(loader)
    it.set_state(state)
    assert list(it) == rest


def test_tfrecord_files_on_gcs(gcs):  # noqa: F811
    uri = f"gs://{BUCKET}/tf/data.tfrecord"
    with tfrecord.TFRecordWriter(uri, filesystem=gcs) as w:
        for r in RECORDS:
            w.write(r)
    assert list(tfrecord.TFRecordIterDataset(uri, filesystem=gcs)) == RECORDS
    source = tfrecord.TFRecordDataSource([uri], filesystem=gcs)
    keys = random.Random(1).sample(range(len(RECORDS)), 50)
    assert source.__getitems__(keys) == [RECORDS[k] for k in keys]


def test_gcsfs_reads_and_writes_through_the_python_path(gcs, gcsfs_fs):  # noqa: F811
    """gcsfs (an fsspec filesystem) writes shards and a TFRecord file that pyarrow's client reads
    back, and reads them itself (sharded specs, globs, a pickled source), through the Python
    path: no native request."""
    for i, half in enumerate([RECORDS[:100], RECORDS[100:]]):
        uri = f"gs://{BUCKET}/fs/train-{i:05d}-of-00002"
        with array_record.ArrayRecordWriter(uri, "group_size:8", filesystem=gcsfs_fs) as w:
            for r in half:
                w.write(r)
    with tfrecord.TFRecordWriter(f"gs://{BUCKET}/fs/data.tfrecord", filesystem=gcsfs_fs) as w:
        for r in RECORDS:
            w.write(r)
    keys = random.Random(2).sample(range(len(RECORDS)), 80)
    native = _native_files.counters()[0]
    python = _remote_reads.stats().requests - native
    for spec in [f"gs://{BUCKET}/fs/train@2", f"gs://{BUCKET}/fs/train-*"]:
        source = grain.sources.ArrayRecordDataSource(spec, filesystem=gcsfs_fs)
        assert source.__getitems__(keys) == [RECORDS[k] for k in keys]
    source = pickle.loads(pickle.dumps(source))
    assert [source[k] for k in keys[:5]] == [RECORDS[k] for k in keys[:5]]
    uri = f"gs://{BUCKET}/fs/data.tfrecord"
    assert list(tfrecord.TFRecordIterDataset(uri, filesystem=gcsfs_fs)) == RECORDS
    assert _native_files.counters()[0] == native
    assert _remote_reads.stats().requests - native > python
    # What gcsfs wrote, pyarrow's client reads.
    source = grain.sources.ArrayRecordDataSource(f"gs://{BUCKET}/fs/train@2", filesystem=gcs)
    assert source.__getitems__(keys) == [RECORDS[k] for k in keys]
