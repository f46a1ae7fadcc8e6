"""The command line, ``python -m spelt inspect`` and ``convert`` (issue 3), run as a user runs it."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from array_record.python import array_record_module as ar_module

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt

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
