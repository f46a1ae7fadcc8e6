"""ParquetIterDataset (rows, columnar batches, several files) and ParquetDataSource (issue 10),
compared with Grain 0.2.18 element by element and state by state, restored in a new process."""

from __future__ import annotations

import pickle
import subprocess
import sys

import cloudpickle
import grain
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
from spelt import _native_files, _parquet

ParquetIterDataset = spelt.experimental.ParquetIterDataset
ParquetDataSource = spelt.experimental.ParquetDataSource


@pytest.fixture(autouse=True, params=["native", "pyarrow"])
def decoder(request, monkeypatch):
    """Every test runs with the native decoder (spelt._parquet_native, which the build makes
    where pyarrow is importable, as it is for these tests) and with pyarrow's alone."""
    assert _native_files.native_module() is not None, "spelt._parquet_native was not built"
    if request.param == "pyarrow":
        monkeypatch.setattr(_native_files, "_native", None)
    return request.param


def _table(n: int, offset: int = 0, ragged: bool = False) -> pa.Table:
    """Every kind of column a user has: numbers, vectors (list and fixed-size), strings, bytes,
    bools, nullable ints (NaN in numpy), and with ``ragged`` lists of varying length."""
    ids = np.arange(offset, offset + n, dtype=np.int64)
    columns = {
        "id": ids,
        "vec": pa.array([np.arange(4, dtype=np.float32) + i for i in ids], pa.list_(pa.float32())),
        "fixed": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(3 * n, dtype=np.int16)), 3),
        "text": [f"row {i}" + "x" * (i % 7) for i in ids],
        "blob": [bytes([i % 256]) * (i % 5) for i in ids],
        "score": pa.array(ids * 0.5, pa.float32()),
        "flag": ids % 3 == 0,
        "maybe": pa.array([None if i % 4 == 1 else int(i) for i in ids], pa.int32()),
    }
    if ragged:
        columns["ragged"] = pa.array([list(range(i % 3)) for i in ids], pa.list_(pa.int64()))
    return pa.table(columns)


def _write(path, table, sizes):
    """Writes table as row groups of the given sizes (0 makes an empty row group)."""
    with pq.ParquetWriter(path, table.schema) as writer:
        start = 0
        for size in sizes:
            writer.write_table(table.slice(start, size))
            start += size
    assert start == len(table)
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("parquet")
    return {
        "main": _write(d / "main.parquet", _table(23), [5, 5, 0, 5, 5, 3, 0]),
        "second": _write(d / "second.parquet", _table(11, offset=100), [4, 7]),
        "one_group": _write(d / "one.parquet", _table(6, offset=200), [6]),
        "ragged": _write(d / "ragged.parquet", _table(9, ragged=True), [4, 5]),
        "many": [
            _write(
                d / f"many{i}.parquet",
                _table(i % 4 + 1, 300 + 10 * i),
                [2, 3][: 1 + i % 2] if i % 4 + 1 >= 5 else [i % 4 + 1],
            )
            for i in range(18)
        ],
    }


def _leaf_types(x):
    if isinstance(x, dict):
        return {k: _leaf_types(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.kind if x.dtype.kind in "SU" else x.dtype.str, x.shape)
    return type(x).__name__


def _assert_same(a, b):
    np.testing.assert_equal(a, b)
    assert _leaf_types(a) == _leaf_types(b)


def _run(ds):
    """(elements, states): states[k] is the state after k elements; the last one is taken after
    the iterator has raised StopIteration."""
    it = iter(ds)
    outputs, states = [], [it.get_state()]
    for x in it:
        outputs.append(x)
        states.append(it.get_state())
    states.append(it.get_state())
    return outputs, states


PIPELINES = {
    "rows": lambda g, f: g.experimental.ParquetIterDataset(f["main"]),
    "rows_one_group": lambda g, f: g.experimental.ParquetIterDataset(f["one_group"]),
    "rows_ragged": lambda g, f: g.experimental.ParquetIterDataset(f["ragged"]),
    "two_files": lambda g, f: g.experimental.ParquetIterDataset([f["main"], f["second"]]),
    "18_files": lambda g, f: g.experimental.ParquetIterDataset(f["many"]),
    "map_then_batch": lambda g, f: (
        g.experimental.ParquetIterDataset(f["main"]).map(lambda r: r["vec"] * 2).batch(4)
    ),
    "two_files_batch": lambda g, f: g.experimental.ParquetIterDataset(
        [f["main"], f["second"]]
    ).batch(6),
}
for _size in (1, 4, 5, 6, 23, 40):
    for _drop in (False, True):
        PIPELINES[f"batch{_size}{'_drop' if _drop else ''}"] = lambda g, f, n=_size, d=_drop: (
            g.experimental.ParquetIterDataset(f["main"]).batch(n, drop_remainder=d)
        )


@pytest.mark.parametrize("name", PIPELINES)
def test_elements_and_states_match_grain(files, name):
    got, got_states = _run(PIPELINES[name](spelt, files))
    want, want_states = _run(PIPELINES[name](grain, files))
    assert got or name == "batch40_drop", "pipeline produced nothing"
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        try:
            _assert_same(a, b)
        except AssertionError as e:
            raise AssertionError(f"element {k} differs") from e
    assert got_states == want_states


@pytest.mark.parametrize("name", ["rows", "rows_ragged"])
def test_row_arrays_are_writable_as_grains_are(files, name):
    """List values of rows are read-only or writable exactly where Grain's are."""

    def flags(g):
        return [
            {k: v.flags.writeable for k, v in row.items() if isinstance(v, np.ndarray)}
            for row in PIPELINES[name](g, files)
        ]

    got = flags(spelt)
    assert got and all(got)
    assert got == flags(grain)


@pytest.mark.parametrize("size", [1, 5, 7, 40])
def test_columnar_batches_equal_batches_of_rows(files, size):
    """The columnar path gives what the engine's batching of row dicts gives."""
    columnar, columnar_states = _run(ParquetIterDataset(files["main"]).batch(size))
    rows, row_states = _run(ParquetIterDataset(files["main"]).map(lambda r: r).batch(size))
    assert (
        type(ParquetIterDataset(files["main"]).batch(size)).__name__ == "_ParquetBatchIterDataset"
    )
    assert len(columnar) == len(rows) > 0
    for a, b in zip(columnar, rows):
        _assert_same(a, b)
        assert all(v.flags.writeable for v in a.values())
    assert columnar_states == row_states


def test_columnar_batches_of_strings_and_bytes(tmp_path):
    """String and binary columns batch column-wise as Grain batches their rows: <U / S arrays as
    wide as the longest value of the batch (also across row groups), empty and NUL-ended values
    included; ASCII, non-ASCII and large strings, and a nullable string column too."""
    table = pa.table(
        {
            "s": ["", "a\x00", "\u00e9" * 3, "bc", "", "longest one"],
            "ascii": ["", "a\x00", "xyz", "bc", "", "longest one"],
            "large": pa.array(["a", "", "bcd", "e\x00", "fg", "h"], pa.large_string()),
            "large_b": pa.array([b"a", b"", b"bcd", b"e\x00", b"fg", b"h"], pa.large_binary()),
            "b": [b"", b"\x00", b"ab\x00", b"x", b"", b"\x00z"],
            "fixed": pa.array([b"ab", b"\x00\x00", b"c\x00", b"de", b"fg", b"hi"], pa.binary(2)),
            "maybe": ["a", None, "bb", None, "c", "d"],
        }
    )
    path = _write(tmp_path / "text.parquet", table, [3, 3])
    for size in (2, 4, 6):
        got, got_states = _run(ParquetIterDataset(path).batch(size))
        want, want_states = _run(grain.experimental.ParquetIterDataset(path).batch(size))
        assert len(got) == len(want) > 0 and got_states == want_states
        for a, b in zip(got, want):
            _assert_same(a, b)
            assert {k: v.dtype for k, v in a.items()} == {k: v.dtype for k, v in b.items()}


@pytest.mark.parametrize("name", PIPELINES)
def test_restore_from_every_position(files, name):
    ds = PIPELINES[name](spelt, files)
    outputs, states = _run(ds)
    for k, state in enumerate(states[:-1]):
        it = iter(ds)
        it.set_state(state)
        assert it.get_state() == state
        rest = list(it)
        assert len(rest) == len(outputs) - k, f"restored at {k}"
        for a, b in zip(rest, outputs[k:]):
            _assert_same(a, b)
    if outputs:  # (the helper reads one element whatever the length)
        spelt.experimental.assert_equal_output_after_checkpoint(ds)


def test_grain_states_restore_in_spelt(files):
    for name in ("rows", "two_files", "batch5"):
        want, states = _run(PIPELINES[name](grain, files))
        for k in (0, 3, len(want) // 2, len(want)):
            it = iter(PIPELINES[name](spelt, files))
            it.set_state(states[k])
            rest = list(it)
            assert len(rest) == len(want) - k
            for a, b in zip(rest, want[k:]):
                _assert_same(a, b)


_CHILD = """
import pickle, sys
import cloudpickle
with open(sys.argv[1], "rb") as f:
    jobs = pickle.load(f)
results = []
for ds_bytes, states in jobs:
    ds = cloudpickle.loads(ds_bytes)
    runs = []
    for state in states:
        it = iter(ds)
        it.set_state(state)
        runs.append((it.get_state(), list(it)))
    results.append(runs)
with open(sys.argv[2], "wb") as f:
    pickle.dump(results, f)
"""


def test_restore_in_new_process(files, tmp_path):
    """Every state of every pipeline, restored in one fresh interpreter."""
    names = list(PIPELINES)
    runs = [_run(PIPELINES[name](spelt, files)) for name in names]
    jobs = [
        (cloudpickle.dumps(PIPELINES[name](spelt, files)), states[:-1])
        for name, (_, states) in zip(names, runs)
    ]
    with open(tmp_path / "jobs.pkl", "wb") as f:
        pickle.dump(jobs, f)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, tmp_path / "jobs.pkl", tmp_path / "out.pkl"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "out.pkl", "rb") as f:
        results = pickle.load(f)
    for name, (outputs, states), restored in zip(names, runs, results):
        assert len(restored) == len(outputs) + 1
        for k, (state, rest) in enumerate(restored):
            assert state == states[k], (name, k)
            assert len(rest) == len(outputs) - k, (name, k)
            for a, b in zip(rest, outputs[k:]):
                _assert_same(a, b)


def test_set_slice_keeps_files(files):
    ds = ParquetIterDataset([files["main"], files["second"]])
    ds.set_slice(slice(1, 2))
    np.testing.assert_equal(list(ds), list(ParquetIterDataset(files["second"])))


def test_uris_filesystems_and_pathlike(files, tmp_path):
    want = list(ParquetIterDataset(files["second"]))
    np.testing.assert_equal(list(ParquetIterDataset("file://" + files["second"])), want)
    np.testing.assert_equal(
        list(ParquetIterDataset(tmp_path.parent / "x" / ".." / files["second"])), want
    )
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    with memory.open("/spelt/second.parquet", "wb") as f, open(files["second"], "rb") as src:
        f.write(src.read())
    ds = ParquetIterDataset("/spelt/second.parquet", filesystem=memory)
    np.testing.assert_equal(list(ds), want)
    np.testing.assert_equal(
        list(ds.batch(4)), list(grain.experimental.ParquetIterDataset(files["second"]).batch(4))
    )
    source = ParquetDataSource("/spelt/second.parquet", filesystem=memory)
    np.testing.assert_equal(source.__getitems__(range(len(source))), want)


def test_bad_files_and_states(files, tmp_path):
    missing = tmp_path / "missing.parquet"
    with pytest.raises(FileNotFoundError, match="missing.parquet"):
        iter(ParquetIterDataset(str(missing)))
    corrupt = tmp_path / "corrupt.parquet"
    with open(files["main"], "rb") as f:
        data = bytearray(f.read())
    data[-3] ^= 0xFF  # the footer's magic bytes
    corrupt.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupt.parquet.*footer"):
        iter(ParquetIterDataset(str(corrupt)))
    with pytest.raises(ValueError, match="corrupt.parquet"):
        ParquetDataSource(str(corrupt))
    it = iter(ParquetIterDataset(files["main"]))
    for bad in ({"next_index": 3}, {"row_group": -1, "index_within_row_group": 0}, [0, 0]):
        with pytest.raises(ValueError, match="row_group"):
            it.set_state(bad)
    it.set_state({"row_group": 99, "index_within_row_group": 0})
    with pytest.raises(ValueError, match="row_group 99 out of range"):
        next(it)
    with pytest.raises(ValueError, match="batch_size"):
        ParquetIterDataset(files["main"]).batch(0)
    with pytest.raises(ValueError, match="ragged"):  # as when batching rows of unequal shapes
        next(iter(ParquetIterDataset(files["ragged"]).batch(3)))


# ---------------------------------------------------------------------------------------------
# ParquetDataSource


def test_source_reads_the_rows_of_the_stream(files):
    paths = [files["main"], files["second"]]
    source = ParquetDataSource(paths)
    rows = list(ParquetIterDataset(paths[0])) + list(ParquetIterDataset(paths[1]))
    assert len(source) == len(rows) == 34
    assert repr(source) == f"ParquetDataSource(paths={paths!r})"
    for i in range(len(rows)):
        _assert_same(source[i], rows[i])
    order = np.random.default_rng(0).permutation(len(rows)).tolist() + [3, 3, 0]
    got = source.__getitems__(order)
    for i, row in zip(order, got):
        _assert_same(row, rows[i])
    assert source.__getitems__([]) == []
    for bad in (-1, len(rows)):
        with pytest.raises(IndexError, match="out of range"):
            source[bad]
    assert source.schema.names == list(rows[0])


def test_source_schema_mismatch_names_the_file(files, tmp_path):
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"id": [1, 2]}), other)
    with pytest.raises(ValueError, match="other.parquet.*schema differs"):
        ParquetDataSource([files["main"], str(other)])
    with pytest.raises(ValueError, match="no paths"):
        ParquetDataSource([])


def test_source_in_pipelines_shuffle_shard_workers(files):
    paths = [files["main"], files["second"]]
    source = ParquetDataSource(paths, cache_row_groups=2)
    rows = source.__getitems__(range(len(source)))
    clone = pickle.loads(pickle.dumps(source))
    assert repr(clone) == repr(source)
    _assert_same(clone[30], rows[30])

    ds = spelt.MapDataset.source(source).seed(5).shuffle()
    order = [int(x["id"]) for x in ds]
    assert sorted(order) == sorted(int(r["id"]) for r in rows) and order != sorted(order)
    batches = list(ds.to_iter_dataset().batch(5))
    assert [int(i) for b in batches for i in b["id"]] == order
    assert batches[0]["vec"].shape == (5, 4) and batches[0]["text"].dtype.kind == "U"

    def loader(workers, shard):
        return spelt.DataLoader(
            data_source=source,
            sampler=spelt.samplers.IndexSampler(
                len(source),
                shard_options=spelt.sharding.ShardOptions(shard, 2),
                shuffle=True,
                seed=7,
                num_epochs=1,
            ),
            operations=[spelt.transforms.Batch(4)],
            worker_count=workers,
        )

    shards = []
    for shard in range(2):
        inline = list(loader(0, shard))
        with_workers = list(loader(2, shard))
        np.testing.assert_equal(with_workers, inline)
        shards.append([int(i) for b in inline for i in b["id"]])
    assert sorted(shards[0] + shards[1]) == sorted(int(r["id"]) for r in rows)
    assert not set(shards[0]) & set(shards[1])
