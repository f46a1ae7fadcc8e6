"""ArrayRecord (issue 3): interop with the array-record package, multi-file sources, corrupt input.

Every file written by array-record's writer must be read back byte for byte by Spelt (one key at
a time, in batches, through a MapDataset and a DataLoader), and every file written by Spelt's
writer by array-record's reader, for each compression and group size. Corrupt files must raise
CorruptFileError naming the file and a byte offset, never return bytes that were not written.

Some corrupt files need valid hashes (e.g. a wrong magic number that is not just a hash
mismatch); they are built with HighwayHash-64 from libhighwayhash, the library libspelt itself
links, checked against the three fixed hashes of the Riegeli file signature.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import ctypes.util
import os
import pathlib
import pickle
import random
import re
import struct

import grain
import numpy as np
import pytest
from array_record.python import array_record_data_source as ar_data_source
from array_record.python import array_record_module as ar_module

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
from spelt import array_record as sar

CorruptFileError = sar.CorruptFileError
UnsupportedError = sar.UnsupportedError
ArrayRecordDataSource = spelt.sources.ArrayRecordDataSource

COMPRESSIONS = ["uncompressed", "zstd", "brotli", "snappy"]
GROUP_SIZES = [1, 3, 65536]
MiB = 1 << 20
BLOCK = 65536
# Empty, tiny, and large records; sizes around the 64 KiB block (65,536 B; 65,512 B usable).
MATRIX_SIZES = [0, 1, 100, 65_000, 70_000, 0, 65_512, 65_536, 7, 3 * MiB, 131_077, 2, 0]


# ---------------------------------------------------------------------------------------------
# Helpers.


def make_records(sizes, seed=0):
    """Records of the given sizes: low-entropy random bytes (compressible, but not trivially)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 12, size, dtype=np.uint8).tobytes() for size in sizes]


def write_with_array_record(path, records, options):
    writer = ar_module.ArrayRecordWriter(os.fspath(path), options)
    for record in records:
        writer.write(record)
    writer.close()
    return os.fspath(path)


def write_with_spelt(path, records, options):
    with spelt.experimental.ArrayRecordWriter(path, options) as writer:
        for record in records:
            writer.write(record)
        assert writer.num_records == len(records)
    return os.fspath(path)


def read_with_array_record(path):
    reader = ar_module.ArrayRecordReader(os.fspath(path))
    try:
        return reader.num_records(), reader.read_all(), reader.writer_options_string()
    finally:
        reader.close()


def sequential_loader(ds, **kwargs):
    sampler = spelt.samplers.IndexSampler(
        len(ds), shard_options=spelt.sharding.NoSharding(), shuffle=False, num_epochs=1
    )
    return spelt.DataLoader(data_source=ds, sampler=sampler, worker_count=0, **kwargs)


def assert_spelt_reads(path, records):
    """Spelt reads `records` from `path` through every read path."""
    n = len(records)
    ds = ArrayRecordDataSource(path)
    assert len(ds) == n
    for i in range(n):  # fresh chunk for each group, then cache hits
        assert ds[i] == records[i], f"record {i} differs"
    assert ds.__getitems__(list(range(n))) == records
    keys = [random.Random(n).randrange(n) for _ in range(2 * n)] if n else []
    assert ds.__getitems__(keys) == [records[k] for k in keys]
    assert ds.__getitems__(list(reversed(range(n)))) == records[::-1]
    assert list(spelt.MapDataset.source(ds)) == records
    assert list(sequential_loader(ds)) == records
    unverified = ArrayRecordDataSource(path, reader_options={"verify_data_hash": "false"})
    assert unverified.__getitems__(list(range(n))) == records
    return ds


def assert_corrupt(path, read, reader_options=None):
    """Opening `path` and reading every record raises CorruptFileError naming file and offset."""
    with pytest.raises(CorruptFileError) as info:
        ds = ArrayRecordDataSource(path, reader_options=reader_options)
        read(ds)
    message = str(info.value)
    assert os.fspath(path) in message
    match = re.search(r"byte offset (\d+)", message)
    assert match, message
    assert int(match[1]) <= max(os.path.getsize(path), 1), message
    return message


def read_each(ds):
    return [ds[i] for i in range(len(ds))]


def read_batch(ds):
    return ds.__getitems__(list(range(len(ds))))


def read_outcome(path, expected, reader_options=None):
    """Opens `path` and reads every record, one at a time and in one batch. Returns "ok" if
    everything reads back as `expected`, "corrupt" if a CorruptFileError (naming the file and a
    byte offset) was raised. Fails if any read returned bytes that were not written there, if
    the length is wrong without an error, or on any other exception."""

    def check(error):
        message = str(error)
        assert os.fspath(path) in message and re.search(r"byte offset \d+", message), message

    try:
        ds = ArrayRecordDataSource(path, reader_options=reader_options)
    except CorruptFileError as e:
        check(e)
        return "corrupt"
    failed = False
    for i in range(len(ds)):
        try:
            record = ds[i]
        except CorruptFileError as e:
            check(e)
            failed = True
            continue
        assert i < len(expected) and record == expected[i], f"wrong bytes for record {i}"
    try:
        batch = ArrayRecordDataSource(path, reader_options=reader_options).__getitems__(
            list(range(len(ds)))
        )
    except CorruptFileError as e:
        check(e)
        failed = True
    else:
        assert batch == expected, "wrong bytes returned for a corrupt file (batched read)"
    if failed:
        return "corrupt"
    assert len(ds) == len(expected)
    return "ok"


# --- the Riegeli layout, for locating headers and rewriting chunks with valid hashes ---------


def _load_highwayhash():
    # The system's library; under `make test-wheel`, where the system copy is hidden from
    # Spelt, a private copy of it (SPELT_TEST_HIGHWAYHASH, tests/wheel/hide_system_codecs.sh).
    path = os.environ.get("SPELT_TEST_HIGHWAYHASH") or ctypes.util.find_library("highwayhash")
    lib = ctypes.CDLL(path or "libhighwayhash.so.0")
    lib.HighwayHash64.restype = ctypes.c_uint64
    lib.HighwayHash64.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p, ctypes.c_uint64]
    key = (ctypes.c_uint64 * 4)(
        0x2F696C6567656952, 0x0A7364726F636572, 0x2F696C6567656952, 0x0A7364726F636572
    )
    return lambda data: lib.HighwayHash64(key, bytes(data), len(data))


riegeli_hash = _load_highwayhash()


def positions(begin, n):
    """File offsets of the first n logical bytes of the chunk at `begin` (block headers skipped)."""
    out, p = [], begin
    while len(out) < n:
        if p % BLOCK == 0:
            p += 24
        out.append(p)
        p += 1
    return out


def chunk_end(begin, data_size, num_records):
    usable = BLOCK - 24

    def add_with_overhead(b, n):
        return b + n + 24 * ((n + ((b + usable - 1) % BLOCK)) // usable)

    def round_up(p):
        return p + max(0, (-p) % BLOCK - (usable - 1))

    return max(add_with_overhead(begin, 40 + data_size), round_up(begin + num_records))


class Chunk:
    def __init__(self, buf, begin):
        self.begin = begin
        header = bytes(buf[p] for p in positions(begin, 40))
        _, self.data_size, _, type_and_count, self.decoded_size = struct.unpack("<5Q", header)
        self.type = chr(type_and_count & 0xFF)
        self.num_records = type_and_count >> 8
        self.end = chunk_end(begin, self.data_size, self.num_records)
        all_positions = positions(begin, 40 + self.data_size)
        self.header_positions = all_positions[:40]
        self.data_positions = all_positions[40:]


def chunks(buf):
    out, p = [], 0
    while p < len(buf):
        out.append(Chunk(buf, p))
        p = out[-1].end
    assert p == len(buf)
    return out


class Padded(int):
    """An int that pb_encode writes as a varint of `width` bytes (non-minimal, still valid)."""

    def __new__(cls, value, width):
        self = super().__new__(cls, value)
        self.width = width
        return self


def varint(n, width=0):
    out = bytearray()
    while True:
        out.append(n & 0x7F)
        n >>= 7
        if not n and len(out) >= width:
            return bytes(out)
        out[-1] |= 0x80


def read_varint(data, pos):
    n = shift = 0
    while True:
        byte = data[pos]
        n |= (byte & 0x7F) << shift
        pos += 1
        shift += 7
        if byte < 0x80:
            return n, pos


def simple_chunk_records(buf, chunk):
    """The records of an uncompressed simple chunk."""
    data = bytes(buf[p] for p in chunk.data_positions)
    assert data[0] == 0, "not an uncompressed chunk"
    sizes_len, pos = read_varint(data, 1)
    sizes, sizes_pos = [], pos
    while sizes_pos < pos + sizes_len:
        size, sizes_pos = read_varint(data, sizes_pos)
        sizes.append(size)
    records, pos = [], pos + sizes_len
    for size in sizes:
        records.append(data[pos : pos + size])
        pos += size
    return records


def rewrite_simple_chunk(buf, chunk, new_records):
    """Rewrites the chunk at chunk.begin as an uncompressed simple chunk of `new_records`, with
    valid hashes (so only the contents are wrong). Use where what follows is a padding chunk,
    which readers skip: a longer chunk overwrites its start."""
    sizes = b"".join(varint(len(r)) for r in new_records)
    data = b"\0" + varint(len(sizes)) + sizes + b"".join(new_records)
    header = bytearray(
        struct.pack(
            "<5Q",
            0,
            len(data),
            riegeli_hash(data),
            ord("r") | len(new_records) << 8,
            sum(map(len, new_records)),
        )
    )
    header[0:8] = struct.pack("<Q", riegeli_hash(header[8:40]))
    for p, byte in zip(positions(chunk.begin, 40 + len(data)), bytes(header) + data):
        buf[p] = byte
    end = chunk_end(chunk.begin, len(data), len(new_records))
    for block in range(-(-chunk.begin // BLOCK) * BLOCK, end, BLOCK):  # block headers inside
        fields = struct.pack("<QQ", block - chunk.begin, end - block)
        buf[block : block + 24] = struct.pack("<Q", riegeli_hash(fields)) + fields


def pb_fields(message):
    """(field number, value) pairs of a protobuf message of varint and length-delimited fields."""
    out, pos = [], 0
    while pos < len(message):
        key, pos = read_varint(message, pos)
        if key & 7 == 0:
            value, pos = read_varint(message, pos)
        else:
            assert key & 7 == 2
            length, pos = read_varint(message, pos)
            value, pos = message[pos : pos + length], pos + length
        out.append((key >> 3, value))
    return out


def pb_encode(fields):
    out = bytearray()
    for number, value in fields:
        if isinstance(value, bytes):
            out += varint(number << 3 | 2) + varint(len(value)) + value
        else:
            out += varint(number << 3) + varint(value, getattr(value, "width", 0))
    return bytes(out)


def test_highwayhash_reproduces_the_riegeli_signature():
    """The helper's hash is Riegeli's: it reproduces the fixed first 64 bytes of every file."""
    assert riegeli_hash(b"") == 0x72C3B1E9C0139FE1
    assert riegeli_hash(struct.pack("<QQ", 0, 64)) == 0x3F4A880DD170AF83


# ---------------------------------------------------------------------------------------------
# Interop: each compression and group size, both directions.


@pytest.fixture(scope="module")
def matrix_records():
    return make_records(MATRIX_SIZES, seed=3)


@pytest.mark.parametrize("group_size", GROUP_SIZES)
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_spelt_reads_files_written_by_array_record(
    tmp_path, matrix_records, compression, group_size
):
    path = write_with_array_record(
        tmp_path / "f", matrix_records, f"group_size:{group_size},{compression}"
    )
    assert_spelt_reads(path, matrix_records)
    facts = sar.info(path)
    n = len(matrix_records)
    assert facts["num_records"] == n
    assert facts["num_chunks"] == -(-n // group_size)
    assert facts["group_size"] == min(group_size, n)
    assert facts["compression"] == compression
    assert facts["decoded_bytes"] == sum(map(len, matrix_records))
    assert facts["file_size"] == os.path.getsize(path)
    assert f"group_size:{group_size}," in facts["writer_options"]


@pytest.mark.parametrize("group_size", GROUP_SIZES)
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_array_record_reads_files_written_by_spelt(
    tmp_path, matrix_records, compression, group_size
):
    path = write_with_spelt(
        tmp_path / "f", matrix_records, f"group_size:{group_size},{compression}"
    )
    num_records, records, options = read_with_array_record(path)
    assert num_records == len(matrix_records)
    assert records == matrix_records
    assert f"group_size:{group_size}," in options and compression in options
    assert os.path.getsize(path) % BLOCK == 0
    reader = ar_module.ArrayRecordReader(path)
    keys = [5, 0, 9, 9, 3, 12]
    assert reader.read(keys) == [matrix_records[k] for k in keys]
    assert reader.read(1, 4) == matrix_records[1:4]
    reader.close()
    # array-record's data source too (it parses the options string for the group size).
    source = ar_data_source.ArrayRecordDataSource(path)
    assert len(source) == len(matrix_records)
    assert source.__getitems__(list(range(len(source)))) == matrix_records
    # And Spelt reads its own file.
    assert ArrayRecordDataSource(path).__getitems__(keys) == [matrix_records[k] for k in keys]


OPTION_STRINGS = [
    "group_size:2,zstd:1",
    "group_size:2,zstd:19",
    "group_size:5,zstd:-7",
    "group_size:4,zstd:3,window_log:27",
    "group_size:2,brotli:0",
    "group_size:2,brotli:11",
    "group_size:3,brotli:6,window_log:25",  # > 24: brotli's large-window format
    "group_size:2,snappy,pad_to_block_boundary:true",
    "group_size:1,uncompressed,pad_to_block_boundary:true",
    "",  # defaults
]


@pytest.mark.parametrize("options", OPTION_STRINGS)
def test_compression_options_interop_both_ways(tmp_path, options):
    records = make_records([300, 0, 5000, 70_000, 1, 128, 20_000], seed=11)
    from_array_record = write_with_array_record(tmp_path / "a", records, options)
    assert_spelt_reads(from_array_record, records)
    from_spelt = write_with_spelt(tmp_path / "s", records, options)
    assert read_with_array_record(from_spelt)[1] == records
    assert ArrayRecordDataSource(from_spelt)[3] == records[3]
    if "pad_to_block_boundary:true" in options:  # every data chunk starts on a block boundary
        for path in (from_array_record, from_spelt):
            data_chunks = [c for c in chunks(bytearray(open(path, "rb").read())) if c.type == "r"]
            assert all(c.begin % BLOCK == 0 for c in data_chunks[1:-1]), path


@pytest.mark.parametrize("delta", range(-28, 29, 2))
def test_records_around_the_block_boundary(tmp_path, delta):
    """A chunk that ends just before, on, or just after the first 64 KiB block boundary.

    Uncompressed group-size-1 chunk 1 starts at 64: header 40 bytes, then compression byte,
    sizes length, a 3-byte size varint and the record, so a record of 65,536 - 109 bytes ends it
    exactly at the boundary.
    """
    size = BLOCK - 109 + delta
    records = make_records([size, 3, 0, BLOCK - 24 + delta, 1], seed=delta + 100)
    for writer in (write_with_array_record, write_with_spelt):
        path = writer(tmp_path / writer.__name__, records, "group_size:1,uncompressed")
        assert ArrayRecordDataSource(path).__getitems__(range(5)) == records
        assert [ArrayRecordDataSource(path)[i] for i in range(5)] == records
        assert read_with_array_record(path)[1] == records
    # Both writers lay the data chunks out the same way.
    layouts = [
        [
            (c.begin, c.type, c.data_size, c.num_records, c.end)
            for c in chunks(bytearray(open(tmp_path / name, "rb").read()))[:6]
        ]
        for name in ("write_with_array_record", "write_with_spelt")
    ]
    assert layouts[0] == layouts[1]
    assert layouts[0][1][-1] == BLOCK + delta + 24 * (delta > 0)  # the end of chunk 1


@pytest.mark.parametrize("n", [0, 1, 100_000])
@pytest.mark.parametrize("options", ["group_size:1,uncompressed", "group_size:65536,zstd"])
def test_files_of_0_1_and_100000_records(tmp_path, n, options):
    records = [b"%d" % i for i in range(n)]
    if n == 1:
        records = [b""]  # a file holding one empty record
    path = write_with_array_record(tmp_path / "a", records, options)
    ds = ArrayRecordDataSource(path)
    assert len(ds) == n
    assert ds.__getitems__(list(range(n))) == records
    assert ds.__getitems__([]) == []
    if n:
        assert ds[n - 1] == records[-1] and ds[n // 2] == records[n // 2]
    with pytest.raises(IndexError, match=str(n)):
        ds[n]
    assert list(spelt.MapDataset.source(ds)) == records
    facts = sar.info(path)
    assert facts["num_records"] == n
    assert facts["compression"] == ("" if n == 0 else options.split(",")[1])
    spelt_path = write_with_spelt(tmp_path / "s", records, options)
    num_records, back, _ = read_with_array_record(spelt_path)
    assert num_records == n and back == records
    assert ArrayRecordDataSource(spelt_path).__getitems__(list(range(n))) == records


def test_large_records_in_parallel_batches(tmp_path):
    """Several MiB records with zstd and group size 1, read by many threads at once."""
    records = make_records([5 * MiB, 0, 3 * MiB + 17, 1, 4 * MiB - 1], seed=5)
    path = write_with_array_record(tmp_path / "a", records, "group_size:1,zstd:1")
    ds = ArrayRecordDataSource(path)
    keys = [4, 0, 2, 2, 1, 3, 4]
    assert ds.__getitems__(keys) == [records[k] for k in keys]
    assert ds[2] == records[2]
    spelt_path = write_with_spelt(tmp_path / "s", records, "group_size:1,zstd:1")
    assert read_with_array_record(spelt_path)[1] == records


def test_concurrent_reads_from_many_threads(tmp_path):
    """Threads share one source (and its chunk cache): every read is exact."""
    records = make_records([random.Random(i).randrange(0, 3000) for i in range(300)], seed=8)
    path = write_with_array_record(tmp_path / "a", records, "group_size:7,zstd")
    ds = ArrayRecordDataSource(path)

    def work(seed):
        rng = random.Random(seed)
        for _ in range(60):
            key = rng.randrange(300)
            assert ds[key] == records[key]
            keys = [rng.randrange(300) for _ in range(rng.randrange(1, 40))]
            assert ds.__getitems__(keys) == [records[k] for k in keys]
        return True

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(16)))


def test_interleaved_reads_across_files_with_the_same_layout(tmp_path):
    """Files whose chunks sit at the same offsets: a chunk cached for one file is never served
    for another."""
    a = [b"a%02d" % i for i in range(9)]
    b = [b"b%02d" % i for i in range(9)]
    paths = [
        write_with_spelt(tmp_path / "a", a, "group_size:3,snappy"),
        write_with_spelt(tmp_path / "b", b, "group_size:3,snappy"),
    ]
    ds = ArrayRecordDataSource(paths)
    for i in range(9):
        assert ds[i] == a[i] and ds[9 + i] == b[i]
    keys = [0, 9, 1, 10, 17, 8, 4, 13]
    assert ds.__getitems__(keys) == [(a + b)[k] for k in keys]


def test_a_corrupt_chunk_does_not_poison_other_reads(tmp_path):
    records = [b"first", b"second", b"third", b"fourth"]
    path = write_with_array_record(tmp_path / "a", records, "group_size:2,uncompressed")
    buf = bytearray(open(path, "rb").read())
    first_chunk = chunks(buf)[1]
    buf[first_chunk.data_positions[-1]] ^= 0x20  # "second" -> "seconD"
    open(path, "wb").write(bytes(buf))
    ds = ArrayRecordDataSource(path)
    for _ in range(2):  # a failed decode is not cached
        with pytest.raises(CorruptFileError, match=f"byte offset {first_chunk.begin}"):
            ds[0]
        assert ds[2] == b"third" and ds.__getitems__([3, 2]) == [b"fourth", b"third"]
        with pytest.raises(CorruptFileError, match=f"byte offset {first_chunk.begin}"):
            ds.__getitems__([2, 3, 1])
    # Without data-hash checks the corruption of uncompressed data goes unnoticed (documented).
    unverified = ArrayRecordDataSource(path, reader_options={"verify_data_hash": "false"})
    assert unverified[1] == b"seconD"


# ---------------------------------------------------------------------------------------------
# Writer.


def test_writer_rejects_bad_options(tmp_path):
    for options in [
        "group_size:0",
        "zstd:99",
        "brotli:12",
        "nonsense",
        "transpose:true",
        "group_size:abc",
    ]:
        with pytest.raises(ValueError, match=re.escape(options.split(":")[0])):
            spelt.experimental.ArrayRecordWriter(tmp_path / "f", options)


def _written_options(writer, path, options):
    """The options string stored in the file `writer` writes with `options`, or "rejected"."""
    try:
        writer(path, [b"abc" * 50, b""], options)
    except (ValueError, RuntimeError):  # Spelt: ValueError; array-record: RuntimeError
        return "rejected"
    return read_with_array_record(path)[2]


@pytest.mark.parametrize(
    "options",
    [
        "",
        "zstd",
        "zstd:0",
        "zstd:22",
        "zstd:-131072",
        "zstd:23",
        "brotli",
        "brotli:11",
        "brotli:12",
        "snappy",
        "uncompressed",
        "max_parallelism:auto",
        "max_parallelism:4",
        "transpose:false",
        "pad_to_block_boundary:true",
        "pad_to_block_boundary:false",
        "window_log:20",
        "zstd,window_log:10",
        "zstd,window_log:31",
        "zstd,window_log:9",
        "brotli,window_log:30",
        "brotli,window_log:31",
        "snappy,window_log:20",
        "uncompressed,window_log:20",
        "window_log:20,snappy",
        "group_size:2147483647",
        "group_size:2147483648",
        "group_size:-1",
        "ZSTD",
        " zstd",
        "zstd:3:4",
        ",",
        "group_size:5,",
        "pad_to_block_boundary",
        "zstd,brotli",
        "group_size:1,group_size:2",
        "default",
        "transpose_bucket_size:10",
    ],
)
def test_writer_option_strings_match_array_record(tmp_path, options):
    """Spelt's writer accepts exactly the option strings array-record's does, and stores the
    same normalized description."""
    ours = _written_options(write_with_spelt, tmp_path / "s", options)
    theirs = _written_options(write_with_array_record, tmp_path / "a", options)
    assert ours == theirs


def test_writer_closed_and_abandoned(tmp_path):
    writer = spelt.experimental.ArrayRecordWriter(tmp_path / "f", "group_size:2")
    writer.write(b"a")
    writer.close()
    writer.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"b")
    assert ArrayRecordDataSource(tmp_path / "f")[0] == b"a"
    # An exception inside the `with` abandons the file: it must not look complete.
    with pytest.raises(RuntimeError):
        with spelt.experimental.ArrayRecordWriter(tmp_path / "g", "group_size:1") as w:
            for i in range(5):
                w.write(b"%d" % i)
            raise RuntimeError("boom")
    assert not (tmp_path / "g").exists()  # abandoned: removed, never left looking complete


def test_writer_accepts_bytes_like_records(tmp_path):
    path = tmp_path / "f"
    with spelt.experimental.ArrayRecordWriter(path, "uncompressed") as w:
        w.write(bytearray(b"ab"))
        w.write(memoryview(b"cd"))
        w.write(np.arange(3, dtype=np.uint8).tobytes())
    assert read_with_array_record(path)[1] == [b"ab", b"cd", b"\x00\x01\x02"]


# ---------------------------------------------------------------------------------------------
# Multi-file sources.

SHARD_RECORDS = [
    [b"s0-%d" % i for i in range(4)],
    [],
    [b"s2-%d" % i for i in range(6)],
    [b"s3-%d" % i * 3 for i in range(1)],
]


@pytest.fixture
def shards(tmp_path):
    """name-0000i-of-00004 for i < 4, of 4, 0, 6 and 1 records, from both writers."""
    paths = []
    for i, records in enumerate(SHARD_RECORDS):
        writer = write_with_array_record if i % 2 == 0 else write_with_spelt
        paths.append(writer(tmp_path / f"name-{i:05d}-of-00004", records, "group_size:3,zstd"))
    return paths


ALL_SHARD_RECORDS = [r for records in SHARD_RECORDS for r in records]


def assert_shards(ds, paths):
    assert len(ds) == len(ALL_SHARD_RECORDS) == 11
    assert [ds[i] for i in range(len(ds))] == ALL_SHARD_RECORDS
    assert ds[3] == b"s0-3" and ds[4] == b"s2-0" and ds[10] == b"s3-0s3-0s3-0"
    keys = [10, 0, 4, 3, 9, 10, 5]
    assert ds.__getitems__(keys) == [ALL_SHARD_RECORDS[k] for k in keys]
    assert ds.paths == [os.fspath(p) for p in paths]
    assert repr(ds) == repr(ar_data_source.ArrayRecordDataSource(list(paths)))


def test_list_of_paths(shards):
    ds = ArrayRecordDataSource(shards)
    assert_shards(ds, shards)
    assert repr(ArrayRecordDataSource([pathlib.Path(p) for p in shards])) == repr(ds)
    other_order = ArrayRecordDataSource(shards[::-1])
    assert repr(other_order) != repr(ds)
    assert other_order[0] == SHARD_RECORDS[3][0]
    # Grain's data source over the same files: same records, same repr.
    theirs = ar_data_source.ArrayRecordDataSource(shards)
    assert [theirs[i] for i in range(len(theirs))] == ALL_SHARD_RECORDS


def test_glob(shards, tmp_path):
    assert_shards(ArrayRecordDataSource(str(tmp_path / "name-*")), shards)
    # spelt convert's manifest beside the shards is not a shard.
    (tmp_path / "name.manifest.json").write_text("{}")
    assert_shards(ArrayRecordDataSource(str(tmp_path / "name*")), shards)
    assert_shards(ArrayRecordDataSource(str(tmp_path / "name-?????-of-00004")), shards)
    assert_shards(
        ArrayRecordDataSource(
            [str(tmp_path / "name-0000[01]-of-00004"), str(tmp_path / "name-0000[23]*")]
        ),
        shards,
    )


def test_sharded_spec(shards, tmp_path):
    assert_shards(ArrayRecordDataSource(str(tmp_path / "name@4")), shards)
    assert_shards(ArrayRecordDataSource(tmp_path / "name@4"), shards)
    assert sar.expand_paths(str(tmp_path / "name@4")) == shards


def test_same_file_twice(shards):
    ds = ArrayRecordDataSource([shards[0], shards[0]])
    assert len(ds) == 8
    assert [ds[i] for i in range(8)] == SHARD_RECORDS[0] * 2


def test_pickle_round_trip_reopens_files(shards):
    ds = ArrayRecordDataSource(shards, reader_options={"verify_data_hash": "false"})
    data = pickle.dumps(ds)
    assert len(data) < 2000  # paths and options, not records or file contents
    restored = pickle.loads(data)
    assert_shards(restored, shards)
    assert repr(restored) == repr(ds)
    # The copy reopens the files by path: it sees a file replaced after pickling.
    replacement = [b"new-%d" % i for i in range(4)]
    write_with_spelt(shards[0] + ".tmp", replacement, "snappy")
    os.replace(shards[0] + ".tmp", shards[0])
    reopened = pickle.loads(data)
    assert [reopened[i] for i in range(4)] == replacement
    assert reopened[4] == b"s2-0"


def test_data_loader_with_workers_over_shards(shards):
    """worker processes get the pickled source; output order is the sampler's."""
    ds = ArrayRecordDataSource(shards)
    sampler = spelt.samplers.IndexSampler(
        len(ds), shard_options=spelt.sharding.NoSharding(), shuffle=True, num_epochs=2, seed=4
    )
    out = list(spelt.DataLoader(data_source=ds, sampler=sampler, worker_count=2))
    assert out == [ALL_SHARD_RECORDS[sampler[i].record_key] for i in range(2 * len(ds))]


def test_source_errors(tmp_path, shards):
    with pytest.raises(ValueError, match="no paths"):
        ArrayRecordDataSource([])
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nothing-*"))):
        ArrayRecordDataSource(str(tmp_path / "nothing-*"))
    missing = str(tmp_path / "missing.array_record")
    with pytest.raises(FileNotFoundError, match=re.escape(missing)):
        ArrayRecordDataSource(missing)
    with pytest.raises(FileNotFoundError, match=re.escape(missing)):
        ArrayRecordDataSource([shards[0], missing])
    with pytest.raises(FileNotFoundError, match="name-00000-of-00005"):
        ArrayRecordDataSource(str(tmp_path / "name@5"))
    with pytest.raises(FileNotFoundError):
        ArrayRecordDataSource(str(tmp_path))  # a directory is not a file
    # A corrupt file among good ones is named.
    bad = tmp_path / "bad"
    bad.write_bytes(b"not an array record file" * 10)
    with pytest.raises(CorruptFileError, match=re.escape(str(bad))):
        ArrayRecordDataSource([shards[0], str(bad)])


def test_index_out_of_range(shards):
    ds = ArrayRecordDataSource(shards)
    for key in [11, 12, 2**40, -1]:
        with pytest.raises(IndexError, match=str(key)):
            ds[key]
        with pytest.raises(IndexError, match=str(key)):
            ds.__getitems__([0, key])
    assert ds[np.int64(4)] == b"s2-0"
    with pytest.raises(TypeError):
        ds["4"]


# ---------------------------------------------------------------------------------------------
# Checkpointing.


@pytest.fixture
def checkpoint_file(tmp_path):
    records = [b"rec-%03d" % i for i in range(23)]
    return write_with_array_record(tmp_path / "ck", records, "group_size:3,zstd"), records


def test_dataset_checkpoint_over_array_record(checkpoint_file):
    path, records = checkpoint_file
    ds = ArrayRecordDataSource(path)
    pipeline = spelt.MapDataset.source(ds).shuffle(seed=1).batch(4)
    spelt.experimental.assert_equal_output_after_checkpoint(pipeline)
    spelt.experimental.assert_equal_output_after_checkpoint(
        spelt.MapDataset.source(ds)
        .shuffle(seed=1)
        .to_iter_dataset(read_options=spelt.ReadOptions(num_threads=4, prefetch_buffer_size=8))
        .batch(4)
    )
    # Worker processes unpickle the source (one restore point: starting workers is slow).
    mp = (
        spelt.MapDataset.source(ds)
        .map(bytes.upper)
        .to_iter_dataset()
        .mp_prefetch(spelt.MultiprocessingOptions(num_workers=2))
    )
    it = iter(mp)
    head = [next(it) for _ in range(9)]
    state = it.get_state()
    rest = list(it)
    assert head + rest == [r.upper() for r in records]
    restored = iter(mp)
    restored.set_state(state)
    assert list(restored) == rest
    # Same output as Grain over array-record's source.
    ours = list(pipeline)
    theirs = list(
        grain.MapDataset.source(ar_data_source.ArrayRecordDataSource(path)).shuffle(seed=1).batch(4)
    )
    assert len(ours) == len(theirs) == 6
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    assert sorted(x for batch in ours for x in batch) == records


def test_data_loader_state_restore(checkpoint_file):
    path, records = checkpoint_file

    def loader(g, source):
        sampler = g.samplers.IndexSampler(
            len(source), shard_options=g.sharding.NoSharding(), shuffle=True, num_epochs=2, seed=7
        )
        return g.DataLoader(
            data_source=source, sampler=sampler, operations=[g.transforms.Batch(3)], worker_count=0
        )

    ds = ArrayRecordDataSource(path)
    full = [list(batch) for batch in loader(spelt, ds)]
    assert sorted(x for batch in full for x in batch) == sorted(records * 2)
    for k in [0, 1, 7, len(full)]:
        it = iter(loader(spelt, ds))
        for _ in range(k):
            next(it)
        state = it.get_state()
        restored = iter(loader(spelt, pickle.loads(pickle.dumps(ds))))
        restored.set_state(state)
        assert [list(batch) for batch in restored] == full[k:]
    # Grain over array-record's source produces the same batches and the same state (the
    # source's repr is part of it), so a Grain checkpoint restores in Spelt.
    g_it = iter(loader(grain, ar_data_source.ArrayRecordDataSource(path)))
    for _ in range(5):
        next(g_it)
    s_it = iter(loader(spelt, ds))
    s_it.set_state(g_it.get_state())
    assert [list(b) for b in s_it] == [list(b) for b in g_it] == full[5:]


# ---------------------------------------------------------------------------------------------
# Transposed chunks.


def test_transposed_file_is_unsupported(tmp_path):
    path = write_with_array_record(
        tmp_path / "t", [b"abc", b"", b"defg"], "group_size:2,transpose:true"
    )
    assert read_with_array_record(path)[1] == [b"abc", b"", b"defg"]  # the package can
    ds = ArrayRecordDataSource(path)
    assert len(ds) == 3
    # Chunks of 2 and 1 records at 64 and 163 (a chunk of 99 bytes).
    assert [(c.begin, c.type) for c in chunks(bytearray(open(path, "rb").read()))[1:3]] == [
        (64, "t"),
        (163, "t"),
    ]
    for read, offset in [
        (lambda: ds[0], 64),
        (lambda: ds[1], 64),
        (lambda: ds[2], 163),
        (lambda: ds.__getitems__([2]), 163),
        (lambda: ds.__getitems__([0, 1]), 64),
        (lambda: list(spelt.MapDataset.source(ds)), 64),
    ]:
        with pytest.raises(UnsupportedError, match=re.escape(path) + f".*byte offset {offset}:"):
            read()
    assert issubclass(UnsupportedError, NotImplementedError)


# ---------------------------------------------------------------------------------------------
# Corrupt input.

REF_RECORDS = make_records([5, 70_000, 0, 15, 100], seed=9)


@pytest.fixture(scope="module")
def ref_file(tmp_path_factory):
    """An uncompressed group-size-1 file (so its footer is uncompressed and editable) with a
    chunk that straddles the block boundary at 65,536: bytes and its chunks."""
    path = write_with_array_record(
        tmp_path_factory.mktemp("ref") / "ref", REF_RECORDS, "group_size:1,uncompressed"
    )
    data = open(path, "rb").read()
    layout = chunks(bytearray(data))
    assert [c.type for c in layout] == ["s", "r", "r", "r", "r", "r", "r", "p", "r", "p"]
    assert len(data) == 3 * BLOCK and layout[-2].begin == 2 * BLOCK
    return data, layout


def corrupt_copy(tmp_path, data, edit, name="corrupt"):
    buf = bytearray(data)
    edit(buf)
    path = tmp_path / name
    path.write_bytes(bytes(buf))
    return os.fspath(path)


def flip(position, bit=0):
    def edit(buf):
        buf[position] ^= 1 << bit

    return edit


def test_empty_file(tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    message = assert_corrupt(path, read_each)
    assert "byte offset 0" in message


@pytest.mark.parametrize(
    "cut",
    [
        1,
        23,
        24,
        63,
        64,
        65,
        100,
        5000,
        BLOCK - 1,
        BLOCK,
        BLOCK + 24,
        BLOCK + 30,
        "footer",
        "footer+41",
        "postscript",
        "postscript+24",
        "postscript+64",
        "postscript+100",
        "end-1",
    ],
)
def test_truncated_file(tmp_path, ref_file, cut):
    data, layout = ref_file
    footer, postscript = layout[6], layout[8]
    points = {
        "footer": footer.begin,
        "footer+41": footer.begin + 41,
        "postscript": postscript.begin,
        "postscript+24": postscript.begin + 24,
        "postscript+64": postscript.begin + 64,
        "postscript+100": postscript.begin + 100,
        "end-1": len(data) - 1,
    }
    size = points.get(cut, cut)
    path = corrupt_copy(tmp_path, data[:size], lambda buf: None)
    assert_corrupt(path, read_each)
    assert_corrupt(path, read_batch)
    with pytest.raises(CorruptFileError, match=re.escape(path)):
        sar.info(path)


def _named_positions(layout):
    """Positions of interesting bytes: every header field, and data at chunk edges."""
    sig, first, straddling, empty, _, last, footer, pad, postscript, _ = layout
    return {
        "block header 0 hash": 0,
        "block header 0 previous_chunk": 9,
        "block header 0 next_chunk": 16,
        "signature chunk header hash": 24,
        "signature data_size": 33,
        "signature type": 48,
        "chunk 1 header hash": first.begin + 3,
        "chunk 1 data_size": first.begin + 8,
        "chunk 1 data hash": first.begin + 20,
        "chunk 1 type": first.begin + 24,
        "chunk 1 num_records": first.begin + 25,
        "chunk 1 decoded size": first.begin + 32,
        "chunk 1 compression byte": first.data_positions[0],
        "chunk 1 sizes": first.data_positions[2],
        "chunk 1 first record byte": first.data_positions[-5],
        "chunk 1 last record byte": first.data_positions[-1],
        "straddling chunk header": straddling.begin + 30,
        "straddling data before block header": BLOCK - 1,
        "block header 65536 hash": BLOCK + 2,
        "block header 65536 previous_chunk": BLOCK + 8,
        "block header 65536 next_chunk": BLOCK + 17,
        "straddling data after block header": BLOCK + 24,
        "straddling data last byte": straddling.data_positions[-1],
        "empty record chunk num_records": empty.begin + 26,
        "last chunk data": last.data_positions[50],
        "footer header": footer.begin + 10,
        "footer metadata": footer.data_positions[10],
        "footer writer options": footer.data_positions[40],
        "footer last entry": footer.data_positions[-2],
        "postscript block header": postscript.begin + 12,
        "postscript chunk header": postscript.begin + 24 + 14,
        "postscript footer offset": postscript.data_positions[6],
        "postscript magic": postscript.data_positions[12],
        "postscript third copy": postscript.data_positions[-1],
    }


NAMED_POSITIONS = [
    "block header 0 hash",
    "block header 0 previous_chunk",
    "block header 0 next_chunk",
    "signature chunk header hash",
    "signature data_size",
    "signature type",
    "chunk 1 header hash",
    "chunk 1 data_size",
    "chunk 1 data hash",
    "chunk 1 type",
    "chunk 1 num_records",
    "chunk 1 decoded size",
    "chunk 1 compression byte",
    "chunk 1 sizes",
    "chunk 1 first record byte",
    "chunk 1 last record byte",
    "straddling chunk header",
    "straddling data before block header",
    "block header 65536 hash",
    "block header 65536 previous_chunk",
    "block header 65536 next_chunk",
    "straddling data after block header",
    "straddling data last byte",
    "empty record chunk num_records",
    "last chunk data",
    "footer header",
    "footer metadata",
    "footer writer options",
    "footer last entry",
    "postscript block header",
    "postscript chunk header",
    "postscript footer offset",
    "postscript magic",
    "postscript third copy",
]


DATA_POSITIONS = {
    "chunk 1 compression byte",
    "chunk 1 sizes",
    "chunk 1 first record byte",
    "chunk 1 last record byte",
    "straddling data before block header",
    "straddling data after block header",
    "straddling data last byte",
    "last chunk data",
    "footer metadata",
    "footer writer options",
    "footer last entry",
    "postscript footer offset",
    "postscript magic",
    "postscript third copy",
}


@pytest.mark.parametrize("name", NAMED_POSITIONS)
def test_flipped_bit_raises(tmp_path, ref_file, name):
    data, layout = ref_file
    position = _named_positions(layout)[name]
    for bit in (0, 7):
        path = corrupt_copy(tmp_path, data, flip(position, bit), f"bit{bit}")
        assert_corrupt(path, read_each)
        assert_corrupt(path, read_batch)
        unverified = {"verify_data_hash": "false"}
        if name not in DATA_POSITIONS:  # header hashes are checked even when data hashes are not
            assert_corrupt(path, read_batch, reader_options=unverified)
        elif name.startswith(("footer", "postscript")):  # the index: raise, or read exactly
            assert read_outcome(path, REF_RECORDS, reader_options=unverified) in ("corrupt", "ok")


def _must_detect(layout, size):
    """Positions whose corruption a reader that checks all hashes always detects: headers of
    the blocks it reads, and header and data of every chunk but padding chunks."""
    out = set()
    for chunk in layout:
        if chunk.type != "p":
            out.update(chunk.header_positions + chunk.data_positions)
            for block in range(chunk.begin - chunk.begin % BLOCK, chunk.end, BLOCK):
                if chunk.begin <= block + 23 and block < size:
                    out.update(range(block, block + 24))
    return out


@pytest.mark.parametrize(
    "options",
    [
        "group_size:1,uncompressed",
        "group_size:2,zstd",
        "group_size:3,brotli",
        "group_size:2,snappy",
    ],
)
def test_every_flipped_byte_raises_or_reads_exactly(tmp_path, options):
    """Flips one bit in every byte of every non-padding chunk (and padding chunk headers): the
    reader raises CorruptFileError or returns exactly the records written; where a hash covers
    the byte it must raise."""
    records = [b"a", b"bc", b"", b"defg" * 5, b"x" * 40]
    path = write_with_array_record(tmp_path / "f", records, options)
    data = open(path, "rb").read()
    layout = chunks(bytearray(data))
    must_detect = _must_detect(layout, len(data))
    sweep = set(must_detect)
    for chunk in layout:
        if chunk.type == "p":
            sweep.update(chunk.header_positions)
    undetected = []
    with open(path, "r+b") as f:
        for position in sorted(sweep):
            f.seek(position)
            f.write(bytes([data[position] ^ (1 << (position % 8))]))
            f.flush()
            outcome = read_outcome(path, records)
            if outcome != "corrupt" and position in must_detect:
                undetected.append(position)
            f.seek(position)
            f.write(data[position : position + 1])
            f.flush()
    assert not undetected, f"flips not detected at {undetected}"
    assert read_outcome(path, records) == "ok"


# --- corrupt contents with valid hashes -------------------------------------------------------


def _edit_postscript(layout, change):
    """An edit that rewrites the three postscript copies with `change(fields)`, hashes valid."""
    postscript = layout[8]

    def edit(buf):
        copies = simple_chunk_records(buf, postscript)
        new = [pb_encode(change(pb_fields(c))) for c in copies]
        rewrite_simple_chunk(buf, postscript, new)

    return edit


def test_wrong_magic(tmp_path, ref_file):
    data, layout = ref_file
    magic = 0x71930E704FDAE05E
    path = corrupt_copy(
        tmp_path,
        data,
        _edit_postscript(
            layout, lambda fields: [(n, v ^ (1 << 20) if n == 2 else v) for n, v in fields]
        ),
    )
    buf = bytearray(open(path, "rb").read())
    assert (
        riegeli_hash(bytes(buf[p] for p in layout[8].data_positions))
        == struct.unpack("<Q", bytes(buf[p] for p in layout[8].header_positions[16:24]))[0]
    )
    assert pb_fields(simple_chunk_records(buf, layout[8])[0])[1] == (2, magic ^ (1 << 20))
    message = assert_corrupt(path, read_each)
    assert f"byte offset {layout[8].begin}" in message
    assert "magic" in message.lower()


def test_not_array_record_files(tmp_path):
    rng = np.random.default_rng(0)
    signature = bytes.fromhex(
        "83af70d10d884a3f00000000000000004000000000000000 91bac23c9287e1a9"
        "0000000000000000e19f13c0e9b1c37273000000000000000000000000000000"
    )
    candidates = {
        "text": b"hello world\n" * 20_000,
        "random": rng.integers(0, 256, 3 * BLOCK, dtype=np.uint8).tobytes(),
        "zeros": bytes(2 * BLOCK),
        "one byte": b"\x00",
        "riegeli signature only": signature,
        "signature then zeros": signature + bytes(BLOCK - 64),
        "two signatures": (signature + bytes(BLOCK - 64)) * 2,
    }
    np.save(tmp_path / "array.npy", np.arange(40_000))
    candidates["npy"] = (tmp_path / "array.npy").read_bytes()
    for name, content in candidates.items():
        path = tmp_path / name.replace(" ", "_")
        path.write_bytes(content)
        assert_corrupt(path, read_each)
        with pytest.raises(CorruptFileError, match=re.escape(str(path))):
            sar.info(path)


def test_valid_hash_rewrites_are_sound(tmp_path, ref_file):
    """Controls for the tests below: rewriting the postscript and footer unchanged (or with
    non-minimal varints) gives a file that reads correctly."""
    data, layout = ref_file
    for edit in [
        _edit_postscript(layout, lambda fields: fields),
        _edit_postscript(layout, lambda f: _with(f, 1, Padded(dict(f)[1], 6))),
        _edit_footer(layout, lambda i, fields: fields),
        _edit_footer(layout, lambda i, f: _with(f, 1, Padded(dict(f)[1], 4)) if i == 1 else f),
    ]:
        path = corrupt_copy(tmp_path, data, edit)
        assert read_outcome(path, REF_RECORDS) == "ok"


@pytest.mark.parametrize(
    "target",
    [
        "beyond end",
        "far beyond end",
        "2^64-1",
        "zero",
        "signature+1",
        "chunk 1",
        "chunk 2 +1",
        "last data chunk",
        "block header",
        "footer-1",
        "footer+1",
        "postscript",
        "padding",
    ],
)
def test_footer_offset_pointing_elsewhere(tmp_path, ref_file, target):
    data, layout = ref_file
    footer = layout[6]
    targets = {
        "beyond end": len(data) + 7,
        "far beyond end": 2**62 + 5,
        "2^64-1": 2**64 - 1,
        "zero": 0,
        "signature+1": 1,
        "chunk 1": layout[1].begin,
        "chunk 2 +1": layout[2].begin + 1,
        "last data chunk": layout[5].begin,
        "block header": BLOCK,
        "footer-1": footer.begin - 1,
        "footer+1": footer.begin + 1,
        "postscript": layout[8].begin,
        "padding": layout[7].begin,
    }
    offset = targets[target]
    path = corrupt_copy(
        tmp_path,
        data,
        _edit_postscript(layout, lambda fields: [(n, offset if n == 1 else v) for n, v in fields]),
    )
    assert_corrupt(path, read_each)


def _edit_footer(layout, change):
    """Rewrites footer records with change(index, fields), hashes valid."""
    footer = layout[6]

    def edit(buf):
        records = simple_chunk_records(buf, footer)
        new = [pb_encode(change(i, pb_fields(r))) for i, r in enumerate(records)]
        rewrite_simple_chunk(buf, footer, new)

    return edit


def _with(fields, number, value):
    return [(n, value if n == number else v) for n, v in fields]


def _metadata_with(fields, number, value):
    ((_, inner),) = fields
    return [(1, pb_encode(_with(pb_fields(inner), number, value)))]


FOOTER_EDITS = {
    # ArrayRecordFooter entries: 1 chunk_offset, 2 decoded_data_size, 3 num_records.
    "entry num_records 1 -> 2": lambda i, f: _with(f, 3, 2) if i == 2 else f,
    "entry num_records 1 -> 0": lambda i, f: _with(f, 3, 0) if i == 4 else f,
    "all entries num_records -> 2": lambda i, f: _with(f, 3, 2) if i else f,
    "entry decoded size": lambda i, f: _with(f, 2, 6) if i == 1 else f,
    "entry offset +1": lambda i, f: _with(f, 1, dict(f)[1] + 1) if i == 5 else f,
    "entry offsets swapped": lambda i, f: (  # chunks at 64 and 112: same varint lengths
        _with(f, 1, 112) if i == 1 else _with(f, 1, 64) if i == 2 else f
    ),
    # Metadata (record 0): 1 version, 2 num_chunks, 3 num_records.
    "metadata num_chunks": lambda i, f: f if i else _metadata_with(f, 2, 4),
    "metadata num_records": lambda i, f: f if i else _metadata_with(f, 3, 6),
    "metadata num_records fewer": lambda i, f: f if i else _metadata_with(f, 3, 4),
}


@pytest.mark.parametrize("name", list(FOOTER_EDITS))
def test_inconsistent_footer_never_returns_wrong_bytes(tmp_path, ref_file, name):
    """A footer whose hashes are valid but whose index disagrees with the chunks: raise, or read
    exactly the records written; never other bytes, never a crash."""
    data, layout = ref_file
    assert [c.begin for c in layout[1:3]] == [64, 112]  # what "swapped" relies on
    path = corrupt_copy(tmp_path, data, _edit_footer(layout, FOOTER_EDITS[name]))
    assert read_outcome(path, REF_RECORDS) == "corrupt"


def test_unknown_layout_version_is_unsupported(tmp_path, ref_file):
    data, layout = ref_file
    path = corrupt_copy(
        tmp_path, data, _edit_footer(layout, lambda i, f: f if i else _metadata_with(f, 1, 2))
    )
    with pytest.raises(UnsupportedError, match=re.escape(path) + ".*byte offset 70425:.*version"):
        ArrayRecordDataSource(path)
