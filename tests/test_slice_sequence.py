"""MapDataset.slice with a sequence of indices (Grain's ReindexMapDataset, upstream 1a709b1).

Grain 0.2.18 has no ReindexMapDataset, so the expected values of upstream's own tests
(grain/_src/python/dataset/transformations/slice_test.py at 1a709b1) are written out here, and
the element rule ``ds.slice(seq)[k] == ds[seq[k]]`` is checked against Grain 0.2.18's
``ds[seq[k]]`` on a pipeline whose elements are Grain's.
"""

import pickle

import grain
import numpy as np
import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
from spelt.transformations import slice as slice_lib


@pytest.mark.parametrize(
    "indices",
    [[3, 1, 4, 1, 5], [0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 0, 0, 0], [7], [9, 8, 7], []],
)
def test_elements_and_length_as_upstream(indices):
    ds = spelt.MapDataset.range(10).slice(indices)
    assert isinstance(ds, slice_lib.ReindexMapDataset)
    assert len(ds) == len(indices)
    assert list(ds) == indices
    assert list(iter(ds)) == indices
    assert list(ds.to_iter_dataset()) == indices


def _pipeline(g):
    return g.MapDataset.range(40).seed(3).shuffle().map(lambda x: x * 10)


def test_element_k_is_the_parent_element_at_index_k_as_in_grain():
    """Indices of both epochs of the parent, repeated and unordered, read what Grain 0.2.18's
    ``ds[i]`` reads for the same pipeline."""
    indices = [39, 0, 17, 17, 55, 41, 2]
    grain_ds = _pipeline(grain)
    got = _pipeline(spelt).slice(indices)
    assert [got[k] for k in range(len(indices))] == [grain_ds[i] for i in indices]
    assert got._getitems([6, 0, 4]) == [grain_ds[i] for i in (2, 39, 55)]  # pylint: disable=protected-access


def test_indices_as_numpy_arrays_ranges_tuples_and_map_datasets():
    ds = spelt.MapDataset.range(20)
    for indices in (
        np.array([5, 19, 0], np.int32),
        np.array([5, 19, 0], np.uint8),
        np.array([5, 19, 0, 7, 8, 9])[::2],  # not contiguous
        (5, 19, 0),
        range(5, 20, 7),
    ):
        assert list(ds.slice(indices)) == [int(i) for i in indices], indices
    assert list(ds.slice(spelt.MapDataset.range(5))) == [0, 1, 2, 3, 4]
    assert list(ds.slice(spelt.MapDataset.range(10)[::2])) == [0, 2, 4, 6, 8]
    assert list(ds.slice(spelt.MapDataset.source([3, 1]).map(lambda x: x + 10))) == [13, 11]


def test_negative_indices_count_from_the_end_as_ds_getitem():
    ds = _pipeline(spelt)
    got = ds.slice([-1, -40, 5, -2])
    assert list(got) == [ds[-1], ds[-40], ds[5], ds[-2]]
    assert list(spelt.MapDataset.range(10).slice([-1, -10])) == [9, 0]


def test_later_epochs_read_the_same_indices_as_a_slice_does():
    """One rule for both kinds of slice (docs/compatibility.md): later epochs of a slice read
    the parent's first-epoch positions again, also above a shuffle and for map_with_index."""
    parent = spelt.MapDataset.range(12).seed(1).shuffle().map_with_index(lambda i, x: (i, x))
    by_indices = parent.slice([2, 5, 8])
    by_slice = parent.slice(slice(2, 9, 3))
    assert [by_indices[k] for k in range(9)] == [by_slice[k] for k in range(9)]
    assert [by_indices[k] for k in range(6)] == [parent[2], parent[5], parent[8]] * 2
    repeated = list(by_indices.repeat(3).to_iter_dataset())
    assert repeated == [parent[2], parent[5], parent[8]] * 3
    # Upstream's test_multi_epoch_access (a range reads the same values in every epoch).
    two = spelt.MapDataset.range(10).slice([3, 7])
    assert [two[k] for k in range(4)] == [3, 7, 3, 7]
    assert two._getitems([0, 1, 2, 3]) == [3, 7, 3, 7]  # pylint: disable=protected-access


def test_slicing_a_reindexed_dataset_gives_a_slice():
    reindexed = spelt.MapDataset.range(10).slice([3, 1, 4, 1, 5])
    sliced = reindexed[1:4]
    assert isinstance(sliced, slice_lib.SliceMapDataset)
    assert list(sliced) == [1, 4, 1]
    assert isinstance(spelt.MapDataset.range(10).slice(slice(2, 5)), slice_lib.SliceMapDataset)


def test_str_as_upstream():
    ds = spelt.MapDataset.range(100)
    assert str(ds.slice([1, 2, 3])) == "ReindexMapDataset(indices=[1, 2, 3], len=3)"
    assert str(ds.slice(list(range(10)))) == "ReindexMapDataset(indices=[0, 1, ..., 8, 9], len=10)"
    assert str(ds.slice(np.arange(3))) == "ReindexMapDataset(indices=[0 1 2], len=3)"
    assert (
        str(ds.slice(np.arange(7) - 3)) == "ReindexMapDataset(indices=[-3, -2, ..., 2, 3], len=7)"
    )


def test_element_spec_is_the_parents():
    got = spelt.experimental.get_element_spec(spelt.MapDataset.range(10).slice([1, 2, 3]))
    want = grain.experimental.get_element_spec(grain.MapDataset.range(10))
    assert (got.shape, got.dtype) == (want.shape, want.dtype) == ((), np.int64)


class _BatchedSource:
    def __init__(self):
        self.batches = []

    def __len__(self):
        return 1000

    def __getitem__(self, index):
        raise AssertionError("read one by one")

    def __getitems__(self, keys):
        self.batches.append(list(keys))
        return [int(k) for k in keys]


def test_reads_reach_the_source_in_batches():
    source = _BatchedSource()
    indices = np.random.default_rng(0).permutation(1000)[:300]
    ds = spelt.MapDataset.source(source).slice(indices)
    assert list(ds.to_iter_dataset()) == indices.tolist()
    assert len(source.batches) < len(indices) // 5  # chunks of the read-ahead, not elements
    assert max(len(b) for b in source.batches) >= 8
    assert sorted(k for b in source.batches for k in b) == sorted(indices.tolist())


def _plus_one(x):
    return x + 1


def test_checkpoint_pickle_and_worker_processes():
    ds = spelt.MapDataset.range(50).map(_plus_one).slice([49, 0, 7, 7, -1, 12])
    it = iter(ds.to_iter_dataset())
    assert [next(it) for _ in range(2)] == [50, 1]
    state = it.get_state()
    rest = list(it)
    restored = iter(ds.to_iter_dataset())
    restored.set_state(state)
    assert list(restored) == rest == [8, 8, 50, 13]
    copy = pickle.loads(pickle.dumps(ds))
    assert list(copy) == list(ds) and str(copy) == str(ds)
    options = spelt.MultiprocessingOptions(num_workers=2)
    assert list(ds.to_iter_dataset().mp_prefetch(options)) == list(ds)


@pytest.mark.parametrize(
    "indices,error,match",
    [
        ("abc", ValueError, r"sl is not a slice: <class 'str'> \(nor a sequence of ints"),
        (3, ValueError, r"sl is not a slice: <class 'int'> \(nor a sequence of ints"),
        ([1, 2.5], TypeError, "position 1 is not an int: 2.5"),
        ([0, None], TypeError, "position 1 is not an int: None"),
        (np.array([0.0, 1.0]), TypeError, "position 0 is not an int"),
        (np.array([True, False]), TypeError, "boolean mask"),
        (np.zeros((2, 2), np.int64), TypeError, r"must be 1-D, got shape \(2, 2\)"),
        ([0, -11], IndexError, "index -11 at position 1 .* length 10"),
        ([2**64], IndexError, "beyond the engine's int64"),
    ],
)
def test_errors_name_the_argument_and_position(indices, error, match):
    with pytest.raises(error, match=match):
        spelt.MapDataset.range(10).slice(indices)


def test_empty_indices_and_empty_parent():
    empty = spelt.MapDataset.range(10).slice([])
    assert len(empty) == 0 and list(empty) == []
    with pytest.raises(IndexError, match="empty sequence of indices"):
        empty[0]  # pylint: disable=pointless-statement
    with pytest.raises(IndexError):
        spelt.MapDataset.range(0).slice([-1])
