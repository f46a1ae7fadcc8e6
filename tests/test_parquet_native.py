"""spelt._parquet_native (the decoder of Parquet row groups on Arrow C++'s column readers)
against pyarrow's read_row_group and Grain 0.2.18: the same rows, batches, dtypes, read-only
flags and states on every kind of column it reads, and the fallback to pyarrow for the columns
and row groups it does not."""

from __future__ import annotations

import grain
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
from spelt import _native_files, _parquet

ROWS = 300


def _table(offset: int = 0) -> pa.Table:
    """Every column kind the native decoder reads, and some it does not (bool, int16, a
    struct) between them."""
    ids = np.arange(offset, offset + ROWS)
    rng = np.random.default_rng(offset)
    return pa.table(
        {
            "i32": pa.array(ids, pa.int32()),
            "i64": pa.array(ids * 3, pa.int64()),
            "flag": ids % 2 == 0,
            "f32": pa.array(rng.standard_normal(ROWS), pa.float32()),
            "f64": pa.array(rng.standard_normal(ROWS), pa.float64()),
            "text": pa.array([f"r{i}" + "é" * (i % 4) for i in ids]),
            "large_text": pa.array([f"L{i}" for i in ids], pa.large_string()),
            "blob": pa.array([bytes([i % 256]) * (i % 3) for i in ids], pa.binary()),
            "vec": pa.array([rng.standard_normal(16) for _ in ids], pa.list_(pa.float32())),
            "big": pa.array([[i, -i] for i in ids], pa.large_list(pa.int64())),
            "fixed": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(3 * ROWS)), 3),
            "ivec": pa.array([[i] * 5 for i in ids], pa.list_(pa.int32())),
            "small": pa.array(ids % 100, pa.int16()),
            "nested": pa.array([{"a": int(i), "b": [float(i)]} for i in ids]),
        }
    )


def _with_irregular_groups(table: pa.Table) -> pa.Table:
    """Nulls, an empty list, a null list and a ragged row, each in one row group only (rows
    100-199 of the file, the second row group)."""
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    columns["i64"][120] = None
    columns["text"][130] = None
    columns["vec"][140] = []
    columns["big"][150] = None
    columns["ivec"][160] = [1, 2]
    columns["f32"][170] = None
    columns["fixed"][180] = None
    return pa.table(columns, schema=table.schema)


WRITERS = {
    "defaults": {},
    "plain_small_pages": {"use_dictionary": False, "data_page_size": 512},
    "zstd_v2_pages": {"compression": "zstd", "data_page_version": "2.0"},
}


@pytest.fixture(
    scope="module", params=[(w, k) for w in WRITERS for k in ("regular", "irregular", "required")]
)
def path(request, tmp_path_factory):
    """Row groups of 100 rows: all regular; or irregular values in the second row group; or
    all regular with every column declared non-nullable."""
    writer, kind = request.param
    table = pa.concat_tables([_table(), _table(ROWS)])
    if kind == "irregular":
        table = pa.concat_tables([_with_irregular_groups(_table()), _table(ROWS)])
    if kind == "required":
        table = table.cast(pa.schema([f.with_nullable(False) for f in table.schema]))
    out = tmp_path_factory.mktemp("native") / f"{writer}-{kind}.parquet"
    pq.write_table(table, out, row_group_size=100, **WRITERS[writer])
    return str(out)


def _rows(g, path, batch=None):
    ds = g.experimental.ParquetIterDataset(path)
    it = iter(ds if batch is None else ds.batch(batch))
    out, states = [], [it.get_state()]
    for x in it:
        out.append(x)
        states.append(it.get_state())
    return out, states


def _assert_identical(a, b, writeable=True):
    """Equal values, types and dtypes, and (if writeable) the same writeable flags."""
    np.testing.assert_equal(a, b)
    for x, y in zip(a, b):
        for key in y:
            u, v = x[key], y[key]
            assert type(u) is type(v), key
            if isinstance(v, np.ndarray):
                assert (u.dtype, u.shape) == (v.dtype, v.shape), key
                assert not writeable or u.flags.writeable == v.flags.writeable, key
            elif isinstance(v, np.generic):
                assert u.dtype == v.dtype, key


def test_decoder_reads_the_columns_it_supports(path):
    file = pq.ParquetFile(path)
    native = _parquet.native_decoder(path, file, {})
    assert native is not None
    supported = {n for n, leaf in zip(file.schema_arrow.names, native.leaves) if leaf is not None}
    assert supported == set(file.schema_arrow.names) - {"flag", "small", "nested"}
    # Row group 1 holds the irregular values (when nullable): those columns come from pyarrow.
    for g in range(file.num_row_groups):
        done = native.decoder.decode(g).decoded
        decoded = {
            n
            for n, leaf in zip(file.schema_arrow.names, native.leaves)
            if leaf is not None and done[leaf]
        }
        irregular = {"i64", "text", "vec", "big", "ivec", "f32", "fixed"}
        assert decoded == (supported - irregular if g == 1 and "irregular" in path else supported)


@pytest.mark.parametrize("batch", [None, 1, 64, 128])
def test_native_equals_pyarrow_and_grain(path, batch, monkeypatch):
    if batch not in (None, 1) and "irregular" in path:  # a ragged row: no batch can hold it
        for g in (spelt, grain):
            with pytest.raises(ValueError):
                _rows(g, path, batch)
        return
    native, native_states = _rows(spelt, path, batch)
    monkeypatch.setattr(_native_files, "_native", None)
    arrow, arrow_states = _rows(spelt, path, batch)
    want, want_states = _rows(grain, path, batch)
    _assert_identical(native, arrow)
    # Grain's batch of one row keeps a read-only list value read-only; Spelt's is a copy.
    _assert_identical(native, want, writeable=batch is None)
    assert native_states == arrow_states == want_states


def test_rows_kept_while_reading_on_keep_their_values(path):
    """Decoded columns live in recycled buffers: a row held while later row groups are read
    keeps its values."""
    rows = list(spelt.experimental.ParquetIterDataset(path))
    again = list(spelt.experimental.ParquetIterDataset(path))
    _assert_identical(rows, again)
    assert rows[5]["vec"].base is not None and not rows[5]["vec"].flags.writeable


@pytest.mark.parametrize("column", ["i64", "text", "vec"])
def test_corrupt_page_raises_pyarrows_error(tmp_path, monkeypatch, column):
    path = tmp_path / "corrupt.parquet"
    pq.write_table(_table(), path, row_group_size=100)
    meta = pq.ParquetFile(path).metadata.row_group(1)
    chunk = meta.column(_leaf(meta, column))
    data = bytearray(path.read_bytes())
    data[chunk.data_page_offset : chunk.data_page_offset + 16] = b"\xff" * 16  # a page header
    path.write_bytes(bytes(data))
    errors = []
    for native in (True, False):
        if not native:
            monkeypatch.setattr(_native_files, "_native", None)
        with pytest.raises(OSError) as e:
            list(spelt.experimental.ParquetIterDataset(str(path)))
        errors.append(str(e.value))
    assert errors[0] == errors[1]


def _leaf(meta, name):
    return next(
        i for i in range(meta.num_columns) if meta.column(i).path_in_schema.startswith(name)
    )


def test_columns_after_nested_ones_are_found(tmp_path, monkeypatch):
    """Structs, maps, lists of structs and dictionaries (several leaves, or types the native
    decoder does not read) before the columns it reads: each is matched to its leaf."""
    n = 50
    table = pa.table(
        {
            "s": pa.array([{"x": i, "y": [float(i)]} for i in range(n)]),
            "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int32())),
            "ls": pa.array([[{"p": i, "q": "a"}] * (i % 2) for i in range(n)]),
            "d": pa.array([f"v{i % 3}" for i in range(n)]).dictionary_encode(),
            "vec": pa.array([[float(i)] * 4 for i in range(n)], pa.list_(pa.float64())),
            "id": pa.array(range(n), pa.int64()),
        }
    )
    path = str(tmp_path / "nested.parquet")
    pq.write_table(table, path, row_group_size=20)
    file = pq.ParquetFile(path)
    native = _parquet.native_decoder(path, file, {})
    assert native.leaves == [None, None, None, None, 7, 8]
    got = _rows(spelt, path)
    monkeypatch.setattr(_native_files, "_native", None)
    _assert_identical(got[0], _rows(spelt, path)[0])
    _assert_identical(got[0], _rows(grain, path)[0])


@pytest.mark.parametrize("batch", [1, 3, 4, 7])
def test_text_batches_made_from_bytes_equal_numpys(tmp_path, monkeypatch, batch):
    """Batches of ASCII strings and of bytes are made from the decoded bytes: the same <U / S
    arrays (width of the batch's longest value, at least 1, trailing NULs counted) as numpy's
    conversion of the values; a batch with a non-ASCII string takes the values' path."""
    text = ["", "", "", "", "a\x00", "bc", "", "\x00\x00", "x" * 9, "é", "ab", "", "z"]
    blob = [s.encode() for s in text]
    table = pa.table({"text": text, "blob": pa.array(blob, pa.binary())})
    path = str(tmp_path / "text.parquet")
    pq.write_table(table, path, row_group_size=5)
    got, states = _rows(spelt, path, batch)
    monkeypatch.setattr(_native_files, "_native", None)
    arrow, arrow_states = _rows(spelt, path, batch)
    want, want_states = _rows(grain, path, batch)
    for a, b, c in zip(got, arrow, want):
        for key in ("text", "blob"):
            assert a[key].dtype == b[key].dtype == c[key].dtype
            assert a[key].tobytes() == b[key].tobytes() == c[key].tobytes()
            assert a[key].flags.writeable
    assert len(got) == len(want) and states == arrow_states == want_states
