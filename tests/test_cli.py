"""The command line, ``python -m spelt inspect`` and ``convert`` (issues 3 and 10), run as a user
runs it."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from array_record.python import array_record_module as ar_module

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
from spelt import _npz

COMPRESSIONS = ["uncompressed", "zstd", "brotli", "snappy"]


def spelt_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "spelt", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


def shard_paths(prefix, n):
    return [f"{prefix}-{i:05d}-of-{n:05d}" for i in range(n)]


def read_shards(prefix, n):
    """Every record of the shards PREFIX-?????-of-N, in order, decoded with np.load."""
    ds = spelt.sources.ArrayRecordDataSource(shard_paths(prefix, n))
    return [
        np.load(io.BytesIO(record), allow_pickle=False)
        for record in ds.__getitems__(list(range(len(ds))))
    ]


def assert_rows_equal(decoded, rows):
    assert len(decoded) == len(rows)
    for got, want in zip(decoded, rows):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def assert_failed(result, *fragments):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@pytest.fixture
def arrays(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, (23, 4, 5), dtype=np.uint8)
    labels = np.arange(23, dtype=np.int64) * 7
    np.save(tmp_path / "images.npy", images)
    np.savez(tmp_path / "pairs.npz", image=images, label=labels)
    return images, labels


# ---------------------------------------------------------------------------------------------
# convert


@pytest.mark.parametrize("compression", COMPRESSIONS + ["zstd:9", "brotli:2"])
def test_convert_npy_to_three_shards(tmp_path, arrays, compression):
    images, _ = arrays
    prefix = tmp_path / "out" / "images"  # the output directory is created
    result = spelt_cli(
        "convert",
        tmp_path / "images.npy",
        "-o",
        prefix,
        "--num-shards",
        3,
        "--compression",
        compression,
    )
    assert result.returncode == 0, result.stderr
    assert f"{prefix}@3" in result.stdout and "23" in result.stdout
    paths = shard_paths(prefix, 3)
    assert all(os.path.isfile(p) for p in paths)
    assert not os.path.exists(f"{prefix}-00003-of-00003")
    # Contiguous shards of 8, 8 and 7 rows, in order.
    assert [len(spelt.sources.ArrayRecordDataSource(p)) for p in paths] == [8, 8, 7]
    assert_rows_equal(read_shards(prefix, 3), list(images))
    name = compression.split(":")[0]
    for path in paths:
        assert spelt.array_record.info(path)["compression"] == name
    # array-record reads the shards too.
    reader = ar_module.ArrayRecordReader(paths[1])
    np.testing.assert_array_equal(np.load(io.BytesIO(reader.read_all()[0])), images[8])
    reader.close()


def test_convert_npz(tmp_path, arrays):
    images, labels = arrays
    prefix = tmp_path / "pairs"
    result = spelt_cli(
        "convert",
        tmp_path / "pairs.npz",
        "-o",
        prefix,
        "--num-shards",
        3,
        "--compression",
        "snappy",
    )
    assert result.returncode == 0, result.stderr
    ds = spelt.sources.ArrayRecordDataSource(f"{prefix}@3")
    assert len(ds) == 23
    for i in range(23):
        with np.load(io.BytesIO(ds[i]), allow_pickle=False) as record:
            assert sorted(record.files) == ["image", "label"]
            np.testing.assert_array_equal(record["image"], images[i])
            np.testing.assert_array_equal(record["label"], labels[i])
            assert record["label"].dtype == np.int64


def test_convert_directory_and_several_inputs(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    parts = [
        np.full((n, 2), i, dtype=np.float32) + np.arange(n)[:, None]
        for i, n in enumerate([5, 1, 9])
    ]
    for i, part in enumerate(parts):  # sorted by name: a.npy, b.npy, c.npy
        np.save(data / f"{'abc'[i]}.npy", part)
    (data / "notes.txt").write_text("ignored")
    extra = np.arange(4, dtype=np.int16)
    np.save(tmp_path / "extra.npy", extra)
    result = spelt_cli(
        "convert",
        data,
        tmp_path / "extra.npy",
        "-o",
        tmp_path / "mixed",
        "--num-shards",
        2,
        "--compression",
        "uncompressed",
        "--group-size",
        3,
    )
    assert result.returncode == 0, result.stderr
    rows = [row for part in parts for row in part] + list(extra)
    assert_rows_equal(read_shards(tmp_path / "mixed", 2), rows)
    facts = spelt.array_record.info(shard_paths(tmp_path / "mixed", 2)[0])
    assert facts["group_size"] == 3 and facts["num_records"] == 10


def test_convert_more_shards_than_rows(tmp_path):
    np.save(tmp_path / "two.npy", np.array([[1, 2], [3, 4]]))
    result = spelt_cli("convert", tmp_path / "two.npy", "-o", tmp_path / "s", "--num-shards", 3)
    assert result.returncode == 0, result.stderr
    assert [
        len(spelt.sources.ArrayRecordDataSource(p)) for p in shard_paths(tmp_path / "s", 3)
    ].count(0) == 1
    assert_rows_equal(read_shards(tmp_path / "s", 3), [np.array([1, 2]), np.array([3, 4])])


def test_convert_bad_inputs(tmp_path, arrays):
    good = tmp_path / "images.npy"
    out = tmp_path / "bad-out"
    missing = tmp_path / "missing.npy"
    assert_failed(spelt_cli("convert", missing, "-o", out), str(missing))
    (tmp_path / "table.txt").write_text("1,2\n3,4\n")
    assert_failed(
        spelt_cli("convert", tmp_path / "table.txt", "-o", out), "table.txt", "not a supported"
    )
    np.savez(tmp_path / "uneven.npz", x=np.arange(7), y=np.arange(6))
    assert_failed(
        spelt_cli("convert", tmp_path / "uneven.npz", "-o", out),
        "uneven.npz",
        "different numbers of rows",
    )
    for shards in ("0", "-2"):
        assert_failed(spelt_cli("convert", good, "-o", out, "--num-shards", shards), "--num-shards")
    assert_failed(spelt_cli("convert", good, "-o", out, "--num-shards", "two"), "--num-shards")
    assert_failed(spelt_cli("convert", good, "-o", out, "--compression", "lz4"), "lz4")
    assert_failed(spelt_cli("convert", good, "-o", out, "--group-size", "0"), "group_size")
    np.save(tmp_path / "scalar.npy", np.float32(1))
    assert_failed(spelt_cli("convert", tmp_path / "scalar.npy", "-o", out), "scalar.npy", "0-d")
    np.savez(tmp_path / "scalar.npz", x=np.float32(1), y=np.arange(3))
    assert_failed(spelt_cli("convert", tmp_path / "scalar.npz", "-o", out), "scalar.npz", "0-d")
    np.savez(tmp_path / "none.npz")
    assert_failed(spelt_cli("convert", tmp_path / "none.npz", "-o", out), "none.npz", "no arrays")
    np.save(tmp_path / "empty.npy", np.zeros((0, 3)))
    assert_failed(spelt_cli("convert", tmp_path / "empty.npy", "-o", out), "no rows")
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert_failed(spelt_cli("convert", tmp_path / "objects.npy", "-o", out), "objects.npy")
    (tmp_path / "garbage.npy").write_bytes(b"definitely not numpy")
    assert_failed(spelt_cli("convert", tmp_path / "garbage.npy", "-o", out), "garbage.npy")
    (tmp_path / "empty_dir").mkdir()
    assert_failed(spelt_cli("convert", tmp_path / "empty_dir", "-o", out), "empty_dir")
    assert_failed(spelt_cli("convert", good), "-o")  # the output prefix is required
    assert not list(tmp_path.glob("bad-out*"))  # no shards written for any of these


# ---------------------------------------------------------------------------------------------
# inspect


@pytest.mark.parametrize(
    "compression,group_size", [("zstd", 1), ("brotli", 3), ("snappy", 65536), ("uncompressed", 2)]
)
def test_inspect(tmp_path, compression, group_size):
    path = tmp_path / "f"
    writer = ar_module.ArrayRecordWriter(str(path), f"group_size:{group_size},{compression}")
    for i in range(10):
        writer.write(b"x" * (100 * i))
    writer.close()
    result = spelt_cli("inspect", path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    chunks = -(-10 // group_size)
    assert str(path) in out
    assert re.search(r"records:\s+10\b", out), out
    assert re.search(rf"chunks:\s+{chunks} \(group size {min(group_size, 10)}\)", out), out
    assert re.search(rf"compression:\s+{compression}\b", out), out
    assert f"({os.path.getsize(path):,} bytes)" in out
    assert f"({sum(100 * i for i in range(10)):,} bytes)" in out  # record bytes
    assert f"group_size:{group_size}," in out  # writer options


def test_inspect_several_files_and_empty_file(tmp_path):
    paths = [tmp_path / "a", tmp_path / "b"]
    with spelt.experimental.ArrayRecordWriter(paths[0], "snappy") as w:
        w.write(b"one")
    with spelt.experimental.ArrayRecordWriter(paths[1], "zstd"):
        pass  # no records
    result = spelt_cli("inspect", *paths)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.split(str(paths[1]))
    assert re.search(r"records:\s+1\b", first) and re.search(r"records:\s+0\b", second)


def test_inspect_corrupt_missing_and_transposed_files(tmp_path):
    good = tmp_path / "good"
    with spelt.experimental.ArrayRecordWriter(good, "group_size:1,uncompressed") as w:
        for i in range(3):
            w.write(b"record %d" % i)
    data = bytearray(good.read_bytes())
    bad = tmp_path / "bad"
    bad.write_bytes(bytes(data[: len(data) - 100]))  # truncated
    result = spelt_cli("inspect", bad)
    assert result.returncode == 1
    assert result.stdout == ""
    assert_failed(result, str(bad), "corrupt", "byte offset")
    flipped = tmp_path / "flipped"
    data[-65536 + 30] ^= 4  # in the postscript's chunk header
    flipped.write_bytes(bytes(data))
    assert_failed(spelt_cli("inspect", flipped), str(flipped), f"byte offset {len(data) - 65536}")
    not_ar = tmp_path / "not-array-record.txt"
    not_ar.write_text("hello\n" * 30_000)
    assert_failed(spelt_cli("inspect", not_ar), str(not_ar), "byte offset")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert_failed(spelt_cli("inspect", empty), str(empty), "byte offset 0")
    missing = tmp_path / "missing"
    assert_failed(spelt_cli("inspect", missing), str(missing))
    transposed = tmp_path / "transposed"
    writer = ar_module.ArrayRecordWriter(str(transposed), "transpose:true")
    writer.write(b"abc")
    writer.close()
    assert_failed(spelt_cli("inspect", transposed), str(transposed), "transposed")
    # Good files are still described; the exit status reports the bad one.
    result = spelt_cli("inspect", good, bad, missing)
    assert result.returncode == 1
    assert str(good) in result.stdout and re.search(r"records:\s+3\b", result.stdout)
    assert str(bad) in result.stderr and str(missing) in result.stderr


def test_usage_errors():
    result = spelt_cli()
    assert result.returncode == 2 and "usage" in result.stderr
    result = spelt_cli("inspect")
    assert result.returncode == 2 and "usage" in result.stderr
    result = spelt_cli("frobnicate")
    assert result.returncode == 2 and "invalid choice" in result.stderr
    result = spelt_cli("--help")
    assert result.returncode == 0 and "inspect" in result.stdout and "convert" in result.stdout


# ---------------------------------------------------------------------------------------------
# convert: Parquet, JSON Lines, CSV, folders of files; manifest, resume, refusals (issue 10)


def _manifest(prefix):
    with open(f"{prefix}.manifest.json") as f:
        return json.load(f)


def _records(prefix, n):
    ds = spelt.sources.ArrayRecordDataSource(f"{prefix}@{n}")
    return ds.__getitems__(list(range(len(ds))))


def _no_partial_files(directory):
    return not [p for p in os.listdir(directory) if p.endswith(".partial")]


def test_convert_parquet_files(tmp_path):
    tables = [
        pa.table(
            {
                "id": np.arange(start, start + n, dtype=np.int64),
                "vec": pa.array(
                    [np.full(3, i, np.float32) for i in range(n)], pa.list_(pa.float32())
                ),
                "text": [f"row {start + i}" for i in range(n)],
            }
        )
        for start, n in ((0, 13), (100, 8))
    ]
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for table, path in zip(tables, paths):
        pq.write_table(table, path, row_group_size=5)
    prefix = tmp_path / "out" / "rows"
    result = spelt_cli("convert", *paths, "-o", prefix, "--num-shards", 3)
    assert result.returncode == 0, result.stderr
    assert f"{prefix}@3" in result.stdout and "21 records" in result.stdout
    want = list(spelt.experimental.ParquetIterDataset(paths[0])) + list(
        spelt.experimental.ParquetIterDataset(paths[1])
    )
    records = _records(prefix, 3)
    assert len(records) == 21
    for record, row in zip(records, want):
        with np.load(io.BytesIO(record), allow_pickle=False) as z:
            assert list(z.files) == ["id", "vec", "text"]
            np.testing.assert_equal({k: z[k] for k in z.files}, row)
            assert z["vec"].dtype == np.float32 and z["id"].dtype == np.int64
    manifest = _manifest(prefix)
    assert manifest["num_records"] == 21 and manifest["records_per_shard"] == [7, 7, 7]
    assert manifest["spec"] == "rows@3" and manifest["shards"] == [
        os.path.basename(p) for p in shard_paths(prefix, 3)
    ]
    assert [s["path"] for s in manifest["sources"]] == [str(p) for p in paths]
    assert [s["records"] for s in manifest["sources"]] == [13, 8]
    assert manifest["schema"] == {"id": "int64", "vec": "list<element: float>", "text": "string"}
    assert manifest["record_format"] == "npz"
    assert manifest["options"]["compression"] == "zstd:3" and manifest["options"]["num_shards"] == 3
    assert _no_partial_files(prefix.parent) and not os.path.exists(
        prefix.parent / ".rows.convert.json"
    )
    # inspect accepts what convert printed, a glob and a list.
    for specs in ([f"{prefix}@3"], [f"{prefix}-*"], shard_paths(prefix, 3)):
        result = spelt_cli("inspect", "--verify", *specs)
        assert result.returncode == 0, result.stderr
        assert result.stdout.count("records:        7") == 3 and "verified" in result.stdout


def test_convert_parquet_errors_name_the_file(tmp_path):
    good, other, corrupt = (
        tmp_path / "good.parquet",
        tmp_path / "other.parquet",
        tmp_path / "bad.parquet",
    )
    pq.write_table(pa.table({"x": [1, 2, 3]}), good)
    pq.write_table(pa.table({"x": ["a", "b"]}), other)
    data = bytearray(good.read_bytes())
    data[-2] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    out = tmp_path / "out"
    assert_failed(spelt_cli("convert", good, other, "-o", out), str(other), "schema differs")
    assert_failed(spelt_cli("convert", good, corrupt, "-o", out), str(corrupt), "footer")
    assert_failed(spelt_cli("convert", tmp_path / "nope.parquet", "-o", out), "nope.parquet")
    assert not list(tmp_path.glob("out*"))


def test_convert_json_lines_and_csv(tmp_path):
    lines = [
        json.dumps({"id": i, "text": f"line {i}", "tags": list(range(i % 3))}) for i in range(9)
    ]
    (tmp_path / "a.jsonl").write_text("\n".join(lines[:5]) + "\n\n")
    (tmp_path / "b.jsonl").write_text("\r\n".join(lines[5:]))
    result = spelt_cli("convert", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "-o", tmp_path / "j")
    assert result.returncode == 0, result.stderr
    assert [r.decode() for r in _records(tmp_path / "j", 1)] == lines
    manifest = _manifest(tmp_path / "j")
    assert manifest["record_format"] == "json" and manifest["schema"] == {
        "keys": ["id", "text", "tags"]
    }

    (tmp_path / "t.csv").write_text('name,count\nalpha,1\n"be, ta",2\n\ngamma,3\n')
    result = spelt_cli("convert", tmp_path / "t.csv", "-o", tmp_path / "c", "--num-shards", 2)
    assert result.returncode == 0, result.stderr
    assert [json.loads(r) for r in _records(tmp_path / "c", 2)] == [
        {"name": "alpha", "count": "1"},
        {"name": "be, ta", "count": "2"},
        {"name": "gamma", "count": "3"},
    ]
    assert _manifest(tmp_path / "c")["schema"] == {"columns": ["name", "count"]}

    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n{"a": \n')
    assert_failed(
        spelt_cli("convert", tmp_path / "bad.jsonl", "-o", tmp_path / "x"), "bad.jsonl", "line 2"
    )
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3\n")
    assert_failed(
        spelt_cli("convert", tmp_path / "bad.csv", "-o", tmp_path / "y"), "bad.csv", "line 3"
    )
    assert not list(tmp_path.glob("x-*")) and not list(tmp_path.glob("y-*"))


def test_convert_tfrecord_files(tmp_path):
    records = [bytes([i % 256]) * (i * 37 % 500) for i in range(40)]
    for name, compression, part in [
        ("a.tfrecord", "", records[:25]),
        ("b.tfr", "GZIP", records[25:]),
    ]:
        with spelt.tfrecord.TFRecordWriter(tmp_path / name, compression) as writer:
            for r in part:
                writer.write(r)
    out = tmp_path / "t"
    result = spelt_cli(
        "convert", tmp_path / "a.tfrecord", tmp_path / "b.tfr", "-o", out, "--num-shards", 3
    )
    assert result.returncode == 0, result.stderr
    assert _records(out, 3) == records
    manifest = _manifest(out)
    assert manifest["record_format"] == "bytes" and manifest["num_records"] == 40

    # A corrupt payload: the error names the file and the byte offset; nothing is written.
    data = bytearray((tmp_path / "a.tfrecord").read_bytes())
    data[-3] ^= 1
    (tmp_path / "bad.tfrecord").write_bytes(bytes(data))
    assert_failed(
        spelt_cli("convert", tmp_path / "bad.tfrecord", "-o", tmp_path / "x"),
        "bad.tfrecord",
        "byte offset",
    )
    assert not list(tmp_path.glob("x-*"))


def test_convert_folder_of_files(tmp_path):
    photos = tmp_path / "photos"
    (photos / "cats").mkdir(parents=True)
    (photos / "dogs").mkdir()
    files = {"cats/1.jpg": b"\xff\xd8one", "cats/2.jpg": b"\xff\xd8two", "dogs/a.png": b"\x89PNG"}
    for name, data in files.items():
        (photos / name).write_bytes(data)
    result = spelt_cli(
        "convert", "--kind", "files", photos, "-o", tmp_path / "p", "--num-shards", 2
    )
    assert result.returncode == 0, result.stderr
    got = {}
    for record in _records(tmp_path / "p", 2):
        with np.load(io.BytesIO(record), allow_pickle=False) as z:
            got[str(z["label"])] = z["data"].tobytes()
    assert got == files
    assert _manifest(tmp_path / "p")["schema"]["extensions"] == [".jpg", ".png"]
    # Without --kind files a folder of images is not a data directory; an empty one is refused.
    assert_failed(spelt_cli("convert", photos, "-o", tmp_path / "q"), str(photos), "--kind files")
    (tmp_path / "empty").mkdir()
    for kind in ("auto", "files"):
        assert_failed(
            spelt_cli("convert", "--kind", kind, tmp_path / "empty", "-o", tmp_path / "q"),
            str(tmp_path / "empty"),
        )


def test_convert_refuses_mixed_kinds_unless_allowed(tmp_path, arrays):
    npy, npz = tmp_path / "images.npy", tmp_path / "pairs.npz"
    assert_failed(
        spelt_cli("convert", npy, npz, "-o", tmp_path / "m"), "--allow-mixed", "npy", "npz"
    )
    assert not list(tmp_path.glob("m-*"))
    result = spelt_cli("convert", npy, npz, "-o", tmp_path / "m", "--allow-mixed")
    assert result.returncode == 0, result.stderr
    manifest = _manifest(tmp_path / "m")
    assert manifest["num_records"] == 46 and manifest["record_format"] == "mixed (see sources)"
    assert [s["kind"] for s in manifest["sources"]] == ["npy", "npz"]


def test_convert_resumes_an_interrupted_conversion_or_refuses(tmp_path):
    lines = [json.dumps({"i": i}) for i in range(40)]
    broken = list(lines)
    broken[33] = '{"i": 3#}'  # same length as '{"i": 33}'
    source = tmp_path / "data.jsonl"
    source.write_text("\n".join(broken) + "\n")
    stat = os.stat(source)
    prefix = tmp_path / "out"
    args = ("convert", source, "-o", prefix, "--num-shards", 4, "--compression", "snappy")
    assert_failed(spelt_cli(*args), "data.jsonl", "line 34")  # interrupted in shard 3
    shards = shard_paths(prefix, 4)
    assert [os.path.exists(p) for p in shards] == [True, True, True, False]
    assert _no_partial_files(
        tmp_path
    )  # the interrupted shard was removed, never left looking complete
    assert not os.path.exists(f"{prefix}.manifest.json")
    done = {p: os.stat(p).st_mtime_ns for p in shards[:3]}
    # Other arguments while an interrupted conversion is there: refused.
    assert_failed(spelt_cli(*args[:-1], "zstd"), "interrupted conversion", "--overwrite")
    # The same arguments and the same input (fixed in place): resumed, complete shards kept.
    source.write_text("\n".join(lines) + "\n")
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    result = spelt_cli(*args)
    assert result.returncode == 0, result.stderr
    assert {p: os.stat(p).st_mtime_ns for p in shards[:3]} == done
    assert [r.decode() for r in _records(prefix, 4)] == lines
    assert _no_partial_files(tmp_path) and not os.path.exists(tmp_path / ".out.convert.json")
    # A finished output is not overwritten without --overwrite.
    assert_failed(spelt_cli(*args), "exists", "--overwrite")
    result = spelt_cli(*args, "--overwrite")
    assert result.returncode == 0, result.stderr
    assert [r.decode() for r in _records(prefix, 4)] == lines


def test_convert_interrupted_with_the_next_shard_open_leaves_no_partial_file(tmp_path):
    # The next shard is opened while one is written: an error abandons both.
    lines = [json.dumps({"i": i}) for i in range(40)]
    lines[23] = '{"i": 2#}'  # in shard 2 of 4, with shard 3 open
    source = tmp_path / "data.jsonl"
    source.write_text("\n".join(lines) + "\n")
    prefix = tmp_path / "out"
    assert_failed(spelt_cli("convert", source, "-o", prefix, "--num-shards", 4), "line 24")
    assert [os.path.exists(p) for p in shard_paths(prefix, 4)] == [True, True, False, False]
    assert _no_partial_files(tmp_path)
    assert os.path.exists(tmp_path / ".out.convert.json")  # the plan, to resume from


def test_inspect_verify_reports_the_first_corrupt_chunk(tmp_path):
    path = tmp_path / "data"
    with spelt.experimental.ArrayRecordWriter(path, "group_size:2,uncompressed") as w:
        for i in range(10):
            w.write(b"record %d " % i * 40)
    data = bytearray(path.read_bytes())
    for i in (7, 3):  # two corrupt chunks: the first one is reported
        data[data.find(b"record %d" % i) + 2] ^= 1
    path.write_bytes(bytes(data))
    assert spelt_cli("inspect", path).returncode == 0  # the index alone is intact
    result = spelt_cli("inspect", "--verify", path)
    assert_failed(result, str(path), "byte offset", "hash mismatch")
    offset = int(re.search(r"byte offset (\d+)", result.stderr)[1])
    assert offset < data.find(b"record 3") and offset > data.find(b"record 1")
    assert_failed(spelt_cli("inspect", tmp_path / "nothing@2"), "nothing-00000-of-00002")
    assert_failed(spelt_cli("inspect", tmp_path / "none-*"), "none-*")


def test_version_and_help_examples():
    result = spelt_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"spelt {spelt.__version__}"
    for command in ("inspect", "convert"):
        result = spelt_cli(command, "--help")
        assert result.returncode == 0 and "examples:" in result.stdout
        assert f"spelt {command} " in result.stdout


def test_convert_parquet_null_value_names_the_row(tmp_path):
    path = tmp_path / "nulls.parquet"
    text = [f"r{i}" for i in range(12)]
    text[7] = None
    pq.write_table(pa.table({"id": np.arange(12), "text": text}), path, row_group_size=5)
    assert_failed(
        spelt_cli("convert", path, "-o", tmp_path / "out"), str(path), "row 7 has a null value"
    )
    assert not list(tmp_path.glob("out*"))


def test_npz_records_equal_npz_bytes_per_row():
    """The column-wise encoder of Parquet rows gives each row's npz_bytes, which numpy reads
    back (numbers, vectors, strings, bytes, datetimes, empty vectors, a non-ASCII name)."""
    n = 9
    columns = {
        "id": np.arange(n, dtype=np.int64),
        "vec": np.arange(n * 4, dtype=np.float32).reshape(n, 4),
        "text": np.array([f"t{i}" * (i % 3) for i in range(n)], dtype=object),
        "blob": np.array([bytes([i]) * (i % 4) for i in range(n)], dtype=object),
        "when": np.arange(n).astype("datetime64[ns]"),
        "empty": np.zeros((n, 0), np.int32),
        "gr\u00f6\u00dfe": np.arange(n) % 2 == 0,
    }
    names = list(columns)
    records = list(_npz.npz_records(names, list(columns.values())))
    assert len(records) == n
    for i, record in enumerate(records):
        assert record == _npz.npz_bytes({k: c[i] for k, c in columns.items()})
        with np.load(io.BytesIO(record), allow_pickle=False) as z:
            assert z.files == names
            for k in names:
                np.testing.assert_array_equal(z[k], columns[k][i])
