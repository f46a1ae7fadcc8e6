"""TFRecord interop and behaviour: Spelt's reader and writer against an independent
implementation of the published format (struct + Google's CRC32C, written here), gzip / zlib
files, corrupt files, and Grain's TFRecordIterDataset (outputs and states after every element,
restoring from every position, in this process and a new one)."""

from __future__ import annotations

import gzip
import logging
import os
import pickle
import struct
import subprocess
import sys
import types
import zlib
from pathlib import Path

import google_crc32c
import numpy as np
import pytest

import pipelines
import spelt
import spelt.experimental
import spelt.tfrecord

logging.getLogger("absl").setLevel(logging.ERROR)
import grain

MORRIS = [b"1", b"1 1", b"2 1", b"1 2 1 1", b"1 1 1 2 2 1"]


# --- An independent TFRecord implementation, from the published format -----------------------


def masked_crc(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def encode(records: list[bytes]) -> bytes:
    """The bytes of an uncompressed TFRecord file holding `records`."""
    out = []
    for payload in records:
        length = struct.pack("<Q", len(payload))
        out += [length, struct.pack("<I", masked_crc(length)), payload]
        out.append(struct.pack("<I", masked_crc(payload)))
    return b"".join(out)


def decode(data: bytes) -> list[bytes]:
    """The records of an uncompressed TFRecord file, every CRC checked (AssertionError)."""
    records, at = [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        assert length_crc == masked_crc(data[at : at + 8]), f"length CRC at {at}"
        payload = data[at + 12 : at + 12 + length]
        assert len(payload) == length, f"truncated at {at}"
        (payload_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        assert payload_crc == masked_crc(payload), f"payload CRC at {at}"
        records.append(payload)
        at += 16 + length
    return records


def make_records(sizes: list[int], seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in sizes]


SIZES = [0, 1, 100, 1024, 0, 262_144, 70_000, 3 << 20, 5]


# --- Interop --------------------------------------------------------------------------------


def test_crc32c_of_the_independent_writer_is_the_published_one():
    assert google_crc32c.value(b"123456789") == 0xE3069283
    assert encode(MORRIS) == Path(grain_morris_path()).read_bytes()


def grain_morris_path() -> str:
    """Grain's own test file, shipped in the grain wheel (testdata of tfrecord_dataset_test)."""
    return str(
        Path(grain.__file__).parent / "_src/python/testdata/morris_sequence_first_5.tfrecord"
    )


def test_reads_files_of_the_independent_writer_byte_for_byte(tmp_path):
    records = make_records(SIZES)
    path = tmp_path / "independent.tfrecord"
    path.write_bytes(encode(records))
    assert list(spelt.experimental.TFRecordIterDataset(path)) == records
    assert list(spelt.tfrecord.iter_records(path)) == records
    source = spelt.experimental.TFRecordDataSource(str(path))
    assert len(source) == len(records)
    assert [source[i] for i in range(len(records))] == records
    keys = [8, 0, 1, 2, 3, 7, 7, 4]
    assert source.__getitems__(keys) == [records[k] for k in keys]


def test_writer_output_reads_back_through_the_independent_reader(tmp_path):
    records = make_records(SIZES, seed=1)
    path = tmp_path / "spelt.tfrecord"
    with spelt.experimental.TFRecordWriter(path) as writer:
        for r in records:
            writer.write(r)
        assert writer.num_records == len(records)
    assert decode(path.read_bytes()) == records
    assert path.read_bytes() == encode(records)  # the format has one encoding


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_files_both_ways(tmp_path, compression):
    records = make_records(SIZES, seed=2)
    compress = gzip.compress if compression == "GZIP" else zlib.compress
    decompress = gzip.decompress if compression == "GZIP" else zlib.decompress
    theirs = tmp_path / "theirs.tfrecord"
    theirs.write_bytes(compress(encode(records)))
    assert spelt.tfrecord.detect_compression(theirs) == compression
    assert list(spelt.experimental.TFRecordIterDataset(theirs)) == records  # detected
    assert list(spelt.experimental.TFRecordIterDataset(theirs, compression)) == records
    ours = tmp_path / "ours.tfrecord"
    with spelt.experimental.TFRecordWriter(ours, compression, level=1) as writer:
        for r in records:
            writer.write(r)
    assert decode(decompress(ours.read_bytes())) == records
    with pytest.raises(ValueError, match="no random access"):
        spelt.experimental.TFRecordDataSource(str(ours))


def test_explicit_uncompressed_reads_a_gzip_file_as_corrupt(tmp_path):
    path = tmp_path / "x.tfrecord.gz"
    path.write_bytes(gzip.compress(encode(MORRIS)))
    assert spelt.tfrecord.detect_compression(path) == "GZIP"
    with pytest.raises(spelt.tfrecord.CorruptFileError, match="length does not match"):
        list(spelt.experimental.TFRecordIterDataset(path, ""))
    with pytest.raises(ValueError, match="compression must be"):
        spelt.experimental.TFRecordIterDataset(path, "gzip")


# --- Corrupt files ---------------------------------------------------------------------------

# Three records of 10, 300000 and 7 bytes: at offsets 0, 26 and 300042.
CORRUPT_RECORDS = make_records([10, 300_000, 7], seed=3)
OFFSETS = [0, 26, 300_042]


def read_error(tmp_path, data: bytes, iter_dataset: bool = True):
    """(records read before the error, the CorruptFileError) for a file holding `data`."""
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(data)
    got = []
    with pytest.raises(spelt.tfrecord.CorruptFileError) as info:
        if iter_dataset:
            got.extend(spelt.experimental.TFRecordIterDataset(path))
        else:
            spelt.experimental.TFRecordDataSource(str(path))
    assert isinstance(info.value, ValueError)
    assert str(path) in str(info.value)
    return got, str(info.value)


@pytest.mark.parametrize("record", [0, 1, 2])
@pytest.mark.parametrize("byte", [0, 7, 8, 11])
def test_corrupt_length_crc_names_the_offset(tmp_path, record, byte):
    data = bytearray(encode(CORRUPT_RECORDS))
    data[OFFSETS[record] + byte] ^= 0x20
    got, message = read_error(tmp_path, bytes(data))
    assert got == CORRUPT_RECORDS[:record]
    assert f"corrupt TFRecord file at byte offset {OFFSETS[record]}:" in message
    assert "CRC32C of the record length" in message
    _, message = read_error(tmp_path, bytes(data), iter_dataset=False)  # indexing finds it too
    assert f"at byte offset {OFFSETS[record]}:" in message


@pytest.mark.parametrize("record", [0, 1, 2])
@pytest.mark.parametrize("where", ["first", "last", "crc"])
def test_corrupt_payload_crc_names_the_offset(tmp_path, record, where):
    data = bytearray(encode(CORRUPT_RECORDS))
    size = len(CORRUPT_RECORDS[record])
    at = OFFSETS[record] + 12 + {"first": 0, "last": size - 1, "crc": size + 2}[where]
    data[at] ^= 0x01
    got, message = read_error(tmp_path, bytes(data))
    assert got == CORRUPT_RECORDS[:record]
    assert f"at byte offset {OFFSETS[record]}:" in message
    assert f"{size}-byte payload does not match" in message
    path = tmp_path / "bad.tfrecord"
    source = spelt.experimental.TFRecordDataSource(str(path))  # index: lengths only
    with pytest.raises(spelt.tfrecord.CorruptFileError, match=f"offset {OFFSETS[record]}:"):
        source[record]
    with pytest.raises(spelt.tfrecord.CorruptFileError, match=f"offset {OFFSETS[record]}:"):
        source.__getitems__([0, 1, 2])


@pytest.mark.parametrize("cut", [1, 11, 12, 20, 26 + 11, 26 + 5000, 300_041, 300_042 + 20])
def test_truncated_file_names_the_offset(tmp_path, cut):
    data = encode(CORRUPT_RECORDS)[:cut]
    record = sum(cut > offset for offset in OFFSETS) - 1
    got, message = read_error(tmp_path, data)
    assert got == CORRUPT_RECORDS[:record]
    assert f"at byte offset {OFFSETS[record]}:" in message
    assert "truncated" in message
    _, message = read_error(tmp_path, data, iter_dataset=False)
    assert f"at byte offset {OFFSETS[record]}:" in message


def test_truncated_gzip_file_is_corrupt(tmp_path):
    data = gzip.compress(encode(CORRUPT_RECORDS))
    _, message = read_error(tmp_path, data[: len(data) // 2])
    assert "corrupt TFRecord file" in message


# --- Grain's TFRecordIterDataset --------------------------------------------------------------


def grain_tfrecord(path):
    return grain.experimental.TFRecordIterDataset(str(path))


@pytest.mark.parametrize("source", ["grain_morris", "generated"])
def test_same_elements_and_states_as_grain_after_every_element(tmp_path, source):
    if source == "grain_morris":
        path, records = grain_morris_path(), MORRIS
    else:
        records = make_records([5, 0, 1000, 300_000, 17, 4096], seed=4)
        path = tmp_path / "generated.tfrecord"
        path.write_bytes(encode(records))
    ours, theirs = iter(spelt.experimental.TFRecordIterDataset(path)), iter(grain_tfrecord(path))
    states = [ours.get_state()]
    assert states[0] == theirs.get_state() == {"reader_offset": 0}
    for expected in records:
        assert next(ours) == next(theirs) == expected
        states.append(ours.get_state())
        assert states[-1] == theirs.get_state()
    for it in (ours, theirs):
        with pytest.raises(StopIteration):
            next(it)
    assert ours.get_state() == theirs.get_state()
    # Restore from every position, from our states and from Grain's (the same dicts).
    for k, state in enumerate(states):
        restored = iter(spelt.experimental.TFRecordIterDataset(path))
        restored.set_state(state)
        assert list(restored) == records[k:]
        theirs = iter(grain_tfrecord(path))
        theirs.set_state(state)
        assert list(theirs) == records[k:]
    spelt.experimental.assert_equal_output_after_checkpoint(
        spelt.experimental.TFRecordIterDataset(path)
    )


def test_missing_and_invalid_files_fail_as_in_grain(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(spelt.experimental.TFRecordIterDataset(tmp_path / "missing.tfrecord"))
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    assert list(spelt.experimental.TFRecordIterDataset(empty)) == []
    one_byte = tmp_path / "one_byte.tfrecord"
    one_byte.write_bytes(b"1")
    with pytest.raises(ValueError):
        list(spelt.experimental.TFRecordIterDataset(one_byte))


def test_bad_states_are_value_errors(tmp_path):
    path = tmp_path / "m.tfrecord"
    path.write_bytes(encode(MORRIS))
    it = iter(spelt.experimental.TFRecordIterDataset(path))
    for state in ({}, {"reader_offset": -1}, {"reader_offset": "3"}, {"reader_offset": 10**6}):
        with pytest.raises(ValueError):
            it.set_state(state)
    it.set_state({"reader_offset": 1})  # not a record boundary: the next read says so
    with pytest.raises(spelt.tfrecord.CorruptFileError, match="at byte offset 1:"):
        next(it)


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_state_restores_in_a_new_process(tmp_path, compression):
    records = make_records([100, 0, 200_000, 30, 3], seed=5)
    path = tmp_path / "f.tfrecord"
    with spelt.experimental.TFRecordWriter(path, compression) as writer:
        for r in records:
            writer.write(r)
    it = iter(spelt.experimental.TFRecordIterDataset(path))
    next(it), next(it), next(it)
    state = it.get_state()
    code = (
        "import sys, hashlib, spelt.experimental as e\n"
        f"it = iter(e.TFRecordIterDataset({str(path)!r}))\n"
        f"it.set_state({state!r})\n"
        "print([hashlib.sha1(r).hexdigest() for r in it])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    import hashlib  # pylint: disable=import-outside-toplevel

    assert out.strip() == str([hashlib.sha1(r).hexdigest() for r in records[3:]])


# --- Pipelines, the data source and the writer -----------------------------------------------


def test_iter_dataset_pipeline_runs_in_the_engine(tmp_path):
    path = tmp_path / "ints.tfrecord"
    path.write_bytes(encode([struct.pack("<q", i) for i in range(10)]))
    ds = (
        spelt.experimental.TFRecordIterDataset(path)
        .map(lambda r: struct.unpack("<q", r)[0])
        .batch(4)
    )
    batches = list(ds)
    assert [b.tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    it = iter(ds)
    next(it)
    assert it.get_state() == {"reader_offset": 4 * (16 + 8)}


def test_data_source_shuffles_globally_and_pickles(tmp_path):
    records = [struct.pack("<q", i) for i in range(100)]
    paths = []
    for shard in range(3):
        path = tmp_path / f"data-{shard:05d}-of-00003"
        path.write_bytes(encode(records[shard * 34 : (shard + 1) * 34]))
        paths.append(str(path))
    source = spelt.experimental.TFRecordDataSource(str(tmp_path / "data@3"))
    assert source.paths == paths and len(source) == 100
    shuffled = list(spelt.MapDataset.source(source).shuffle(seed=7))
    assert sorted(shuffled) == sorted(records) and shuffled != records
    assert shuffled == [records[i] for i in spelt.MapDataset.range(100).shuffle(seed=7)]
    copy = pickle.loads(pickle.dumps(source))
    assert repr(copy) == repr(source) and copy.__getitems__([99, 0]) == [records[99], records[0]]
    with pytest.raises(IndexError):
        source[100]
    loader = spelt.DataLoader(
        data_source=source,
        sampler=spelt.samplers.IndexSampler(
            100, shuffle=True, seed=3, num_epochs=1, shard_options=spelt.sharding.NoSharding()
        ),
        worker_count=0,
    )
    assert sorted(loader) == sorted(records)


def test_progress_line_without_tqdm(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # `import tqdm` raises ImportError
    path = tmp_path / "p.tfrecord"
    path.write_bytes(encode(make_records([1000] * 50)))
    spelt.experimental.TFRecordDataSource(str(path), progress=True)
    err = capsys.readouterr().err
    assert "indexing TFRecord files" in err and "(100%)" in err and err.endswith("\n")
    spelt.experimental.TFRecordDataSource(str(path))  # small: no progress by default
    assert capsys.readouterr().err == ""


def test_progress_bar_with_tqdm(tmp_path, monkeypatch):
    bars = []

    class Bar:
        def __init__(self, total, **kwargs):
            self.total, self.n, self.closed = total, 0, False
            bars.append(self)

        def update(self, n):
            self.n += n

        def close(self):
            self.closed = True

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=Bar))
    path = tmp_path / "p.tfrecord"
    path.write_bytes(encode(make_records([1000] * 50)))
    spelt.experimental.TFRecordDataSource(str(path), progress=True)
    size = os.path.getsize(path)
    assert len(bars) == 1 and bars[0].total == size and bars[0].n == size and bars[0].closed


def test_writer_errors_and_abandoned_files(tmp_path):
    path = tmp_path / "w.tfrecord"
    with (
        pytest.raises(TypeError, match="not str"),
        spelt.experimental.TFRecordWriter(path) as writer,
    ):
        writer.write(b"ok")
        writer.write("text")
    assert not path.exists()  # abandoned: never left looking complete
    writer = spelt.experimental.TFRecordWriter(path)
    writer.write(bytearray(b"ab"))
    writer.close()
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"x")
    assert decode(path.read_bytes()) == [b"ab"]
    with pytest.raises(ValueError, match="compression must be"):
        spelt.experimental.TFRecordWriter(path, "BZIP2")
    with pytest.raises(ValueError, match="level"):
        spelt.experimental.TFRecordWriter(path, "GZIP", level=12)


def test_direct_iterator_and_engine_pipeline_agree(tmp_path):
    """iter(ds) reads into bytes directly; ds.map(...) runs the engine node: same records and
    states, and each restores the other's states."""
    records = make_records([10, 50_000, 200_000, 3, 0, 70_000], seed=6)
    path = tmp_path / "both.tfrecord"
    path.write_bytes(encode(records))
    ds = spelt.experimental.TFRecordIterDataset(path)
    direct, engine = iter(ds), iter(ds.map(lambda r: r))
    assert isinstance(direct, spelt.DatasetIterator)
    for expected in records:
        assert direct.get_state() == engine.get_state()
        assert next(direct) == next(engine) == expected
    for k in range(len(records) + 1):
        state = {"reader_offset": sum(16 + len(r) for r in records[:k])}
        a, b = iter(ds), iter(ds.map(lambda r: r))
        a.set_state(state)
        b.set_state(state)
        assert list(a) == list(b) == records[k:]


def test_direct_iterator_threads_and_close(tmp_path):
    records = [struct.pack("<q", i) * (1 + i % 5000) for i in range(3000)]
    path = tmp_path / "threads.tfrecord"
    path.write_bytes(encode(records))
    it = iter(spelt.experimental.TFRecordIterDataset(path))
    got = pipelines.drain_in_threads(it)
    assert sorted(r for out in got for r in out) == sorted(records)  # each exactly once
    it.close()
    it.close()
    with pytest.raises(ValueError, match="closed"):
        next(it)
