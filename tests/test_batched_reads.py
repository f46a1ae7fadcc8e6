"""Batched reads (issue 7, item 2): nodes pull from their parents a chunk at a time.

* A Python source with Grain's ``_getitems`` (or array-record's / PyTorch's ``__getitems__``)
  is called once per chunk of indices, never per record; an error in the middle of a chunk is
  raised at the right element with the source's own exception type, and the elements after
  it still come.
* A numpy array of a Spelt dtype is read in C++ without the GIL (rows are zero-copy views);
  every output (dtypes, shapes, values, batches) equals the per-record Python path and Grain.
* ArrayRecord: a corrupt record met by a pipeline's batched read is named in the error.
"""

import gc
import warnings

import grain
import numpy as np
import pytest

from pipelines import assert_same, timeout  # noqa: F401  (timeout: autouse fixture)
import spelt
from spelt import _core


class CountingSource:
    """Records i * 10; counts __getitem__ calls and the index lists of batched calls.

    `bad`: keys whose reads raise `exc` (both per record and batched).
    """

    def __init__(self, n=100, bad=(), exc=ValueError):
        self._n = n
        self._bad = set(bad)
        self._exc = exc
        self.single = []
        self.batches = []

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        self.single.append(i)
        if i in self._bad:
            raise self._exc(f"cannot read {i}")
        return i * 10

    def _read_batch(self, keys):
        self.batches.append(list(keys))
        for k in keys:
            if k in self._bad:
                raise self._exc(f"cannot read {k} (batched)")
        return [k * 10 for k in keys]

    def __repr__(self):
        return f"CountingSource(n={self._n})"


class GrainBatched(CountingSource):
    """Grain's SupportsBatchedReadRandomAccessDataSource protocol."""

    def _getitems(self, keys):
        return self._read_batch(keys)


class TorchBatched(CountingSource):
    """array-record's and PyTorch's name for the batched read."""

    def __getitems__(self, keys):
        return self._read_batch(keys)


def _note(e):
    return "\n".join(getattr(e, "__notes__", []))


@pytest.mark.parametrize("cls", [GrainBatched, TorchBatched])
def test_batched_source_sees_whole_chunks(cls):
    src = cls(1000)
    ds = spelt.MapDataset.source(src).seed(0).shuffle().batch(16)
    out = [b.tolist() for b in ds]
    assert src.single == []
    keys = [k for batch in src.batches for k in batch]
    assert sorted(keys) == list(range(1000))  # every record read exactly once
    # Chunks of several batches: far fewer calls than batches, most calls many batches long.
    assert len(src.batches) < len(out) / 4
    assert max(len(b) for b in src.batches) >= 16 * 8
    expected = grain.MapDataset.source(CountingSource(1000)).seed(0).shuffle().batch(16)
    assert out == [b.tolist() for b in expected]


def test_batched_source_in_a_data_loader():
    src = GrainBatched(200)
    loader = spelt.DataLoader(
        data_source=src,
        sampler=spelt.samplers.IndexSampler(200, shuffle=True, seed=1, num_epochs=1),
        operations=[spelt.transforms.Batch(8)],
        worker_count=0,
    )
    out = [b.tolist() for b in loader]
    expected = grain.DataLoader(
        data_source=CountingSource(200),
        sampler=grain.samplers.IndexSampler(200, shuffle=True, seed=1, num_epochs=1),
        operations=[grain.transforms.Batch(8)],
        worker_count=0,
    )
    assert out == [b.tolist() for b in expected]
    if src.batches:  # the sampler stage reads in batches where it supports it
        assert src.single == []


@pytest.mark.parametrize("cls", [GrainBatched, TorchBatched, CountingSource])
@pytest.mark.parametrize("exc", [ValueError, KeyError, OSError])
def test_error_in_the_middle_of_a_chunk(cls, exc):
    src = cls(40, bad={21}, exc=exc)
    it = iter(spelt.MapDataset.source(src).to_iter_dataset())
    got = []
    with pytest.raises(exc) as info:
        while True:
            got.append(next(it))
    assert got == [i * 10 for i in range(21)]
    assert "cannot read 21" in str(info.value)
    assert "(batched)" not in str(info.value)  # the per-record error, as Get() raises it
    assert "record 21" in _note(info.value)
    assert "CountingSource(n=40)" in _note(info.value)
    assert list(it) == [i * 10 for i in range(22, 40)]  # later elements still come


def test_error_in_a_batch_of_a_map_dataset_batch():
    src = TorchBatched(40, bad={13})
    it = iter(spelt.MapDataset.source(src).batch(4))
    assert [next(it).tolist() for _ in range(3)] == [
        [0, 10, 20, 30],
        [40, 50, 60, 70],
        [80, 90, 100, 110],
    ]
    with pytest.raises(ValueError, match="cannot read 13"):
        next(it)
    assert next(it).tolist() == [160, 170, 180, 190]


class Interrupted(TorchBatched):
    def __getitems__(self, keys):
        raise KeyboardInterrupt


def test_keyboard_interrupt_is_not_swallowed():
    src = Interrupted(10)
    with pytest.raises(KeyboardInterrupt):
        list(spelt.MapDataset.source(src))
    assert src.single == []  # no fall-back to reads one at a time


class WrongCount(TorchBatched):
    def __getitems__(self, keys):
        return super().__getitems__(keys)[:-1]


class BrokenBatched(TorchBatched):
    def __getitems__(self, keys):
        raise TypeError("bug in __getitems__")


@pytest.mark.parametrize("cls", [WrongCount, BrokenBatched])
def test_broken_batched_read_falls_back_with_a_warning(cls):
    src = cls(10)
    with pytest.warns(RuntimeWarning, match="every record read alone"):
        assert list(spelt.MapDataset.source(src)) == [i * 10 for i in range(10)]
    assert sorted(src.single) == list(range(10))


# ---------------------------------------------------------------------------------------------
# numpy arrays.


class RowSource:
    """The per-record Python path over an array: what a numpy source was read as before."""

    def __init__(self, arr):
        self._arr = arr

    def __len__(self):
        return len(self._arr)

    def __getitem__(self, i):
        return self._arr[i]


class GatherSource(RowSource):
    """A Python source whose batched read is one numpy gather."""

    def __getitems__(self, keys):
        return self._arr[np.asarray(keys)]


def _arrays():
    rng = np.random.default_rng(0)
    return {
        "uint8": rng.integers(0, 256, (50, 7), dtype=np.uint8),
        "float32_3d": rng.random((41, 3, 2), dtype=np.float32),
        "float16": rng.random((30, 4)).astype(np.float16),
        "bool": rng.random((30, 5)) > 0.5,
        "int64": rng.integers(-1000, 1000, (33, 2)),
        "uint16_empty_rows": np.zeros((20, 0), np.uint16),
    }


def _pipelines(g, src):
    return {
        "source": g.MapDataset.source(src),
        "shuffle_batch": g.MapDataset.source(src).seed(3).shuffle().batch(8),
        "batch_drop": g.MapDataset.source(src).batch(6, drop_remainder=True),
        "iter_batch": g.MapDataset.source(src).seed(3).shuffle().to_iter_dataset().batch(7),
        "map": g.MapDataset.source(src).map(lambda x: x[:1]).batch(4),
        "loader": g.DataLoader(
            data_source=src,
            sampler=g.samplers.IndexSampler(len(src), shuffle=True, seed=2, num_epochs=2),
            operations=[g.transforms.Batch(5)],
            worker_count=0,
        ),
    }


@pytest.mark.parametrize("name", list(_arrays()))
def test_numpy_source_is_native_and_equals_the_per_record_path(name):
    arr = _arrays()[name]
    assert not _core.source(arr).calls_python()  # read in C++, no GIL
    assert _core.source(RowSource(arr)).calls_python()
    native = _pipelines(spelt, arr)
    python = _pipelines(spelt, RowSource(arr))
    gather = _pipelines(spelt, GatherSource(arr))
    reference = _pipelines(grain, arr)
    for key in native:
        out = list(native[key])
        assert_same(out, list(python[key]))
        assert_same(out, list(gather[key]))
        assert_same(out, list(reference[key]))
    ds = spelt.MapDataset.source(arr)
    for i in (0, 5, len(arr) + 3):  # random access, later epochs too
        assert_same(ds[i], arr[i % len(arr)])


def test_numpy_rows_are_views_that_keep_the_array_alive():
    arr = np.arange(60, dtype=np.int32).reshape(20, 3)
    ds = spelt.MapDataset.source(arr)
    row = ds[4]
    assert np.shares_memory(row, arr)
    del arr, ds
    gc.collect()
    assert row.tolist() == [12, 13, 14]


class SubArray(np.ndarray):
    pass


@pytest.mark.parametrize(
    "arr",
    [
        np.arange(10),  # 1-d: items are numpy scalars
        np.arange(20).reshape(10, 2)[:, ::-1],  # not C-contiguous
        np.arange(20, dtype=">i4").reshape(10, 2),  # byte-swapped
    ],
    ids=["1d", "strided", "big_endian"],
)
def test_other_numeric_arrays_keep_the_python_path(arr):
    assert _core.source(arr).calls_python()
    for key, out in _pipelines(spelt, arr).items():
        if key == "map" and arr.ndim == 1:
            continue  # x[:1] of a scalar
        assert_same(list(out), list(_pipelines(grain, arr)[key]))


def test_arrays_without_a_spelt_dtype_or_of_a_subclass_keep_the_python_path():
    assert _core.source(np.array([["a", "b"], ["c", "d"]])).calls_python()
    assert _core.source(np.array([[1, None]], dtype=object)).calls_python()
    assert _core.source(np.arange(20).reshape(10, 2).view(SubArray)).calls_python()
    read_only = np.frombuffer(bytes(range(20)), np.uint8).reshape(10, 2)
    assert _core.source(read_only).calls_python()
    assert not spelt.MapDataset.source(read_only)[3].flags.writeable


def test_numpy_source_with_worker_processes():
    arr = np.random.default_rng(1).integers(0, 256, (300, 10), dtype=np.uint8)

    def loader(g, workers):
        return g.DataLoader(
            data_source=arr,
            sampler=g.samplers.IndexSampler(len(arr), shuffle=True, seed=5, num_epochs=1),
            operations=[g.transforms.Batch(32)],
            worker_count=workers,
        )

    assert_same(list(loader(spelt, 2)), list(loader(grain, 0)))


# ---------------------------------------------------------------------------------------------
# ArrayRecord.


def test_array_record_pipeline_names_the_corrupt_record(tmp_path):
    path = str(tmp_path / "data.array_record")
    records = [f"record {i:03d} ".encode() * 20 for i in range(30)]
    with spelt.experimental.ArrayRecordWriter(path, "group_size:1,uncompressed") as writer:
        for r in records:
            writer.write(r)
    data = bytearray(open(path, "rb").read())
    offset = data.find(records[17])
    data[offset + 5] ^= 1
    open(path, "wb").write(bytes(data))
    source = spelt.sources.ArrayRecordDataSource(path)
    it = iter(spelt.MapDataset.source(source).to_iter_dataset())
    got = []
    with pytest.raises(spelt.array_record.CorruptFileError, match="record key 17"):
        while True:
            got.append(next(it))
    assert got == records[:17]
    assert list(it) == records[18:]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = list(spelt.MapDataset.source(source).slice(slice(0, 17)).batch(4))
    assert [list(b) for b in out] == [records[i : min(i + 4, 17)] for i in range(0, 17, 4)]


def test_map_dataset_getitems_reads_the_source_once():
    """MapDataset._getitems (Grain's batched read) is one engine read: the source's
    __getitems__ sees all the indices at once, and the elements equal ds[i]."""

    class Source:
        def __init__(self):
            self.batches = []

        def __len__(self):
            return 10

        def __getitem__(self, i):
            return i

        def __getitems__(self, indices):
            self.batches.append(list(indices))
            return list(indices)

    source = Source()
    ds = spelt.MapDataset.source(source).map(lambda x: x * 2).filter(lambda x: x != 4)
    indices = [1, 2, -1, 15]
    got = ds._getitems(indices)
    assert source.batches == [[1, 2, 9, 5]]
    assert got == [ds[i] for i in indices] == [2, None, 18, 10]
    assert ds._getitems([0, -11]) == [ds[0], ds[-11]] == [0, 18]  # -11: epoch -1, as Grain
    with pytest.raises(IndexError):
        ds.repeat()._getitems([0, -1])  # an infinite dataset has no addressable epoch -1
