"""MapDataset.slice with a sequence of indices (Grain's ReindexMapDataset, upstream 1a709b1)
and the one rule it shares with slice(slice): a fixed subset in every epoch.

Grain 0.2.18 has no ReindexMapDataset, so the expected values of upstream's own tests
(grain/_src/python/dataset/transformations/slice_test.py at 1a709b1) are written out here, and
the element rule ``ds.slice(seq)[k] == ds[seq[k]]`` is checked against Grain 0.2.18's
``ds[seq[k]]`` on a pipeline whose elements are Grain's.
"""

import json
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


def test_negative_indices_read_an_earlier_epoch_as_ds_getitem_and_grain():
    # ds[-1] is the last element of epoch -1 (per-epoch seeds seed - 1), as in Grain 0.2.18.
    ds, grain_ds = _pipeline(spelt), _pipeline(grain)
    indices = [-1, -40, 5, -2, -41, -95]
    got = ds.slice(indices)
    assert list(got) == [ds[i] for i in indices] == [grain_ds[i] for i in indices]
    assert list(got) != [ds[i % 40] for i in indices]  # not the first epoch's
    assert list(spelt.MapDataset.range(10).slice([-1, -10, -11])) == [9, 0, 9]


@pytest.mark.parametrize("parent", [spelt.MapDataset.range(0), spelt.MapDataset.range(10).repeat()])
def test_negative_indices_that_the_parent_cannot_address_are_named(parent):
    # An empty parent has no epoch -1; an infinite one's cannot be addressed by int64 indices.
    with pytest.raises(IndexError, match="index -11 at position 1"):
        parent.slice([0, -11])
    with pytest.raises(IndexError, match="index -20 at position 1"):
        parent.slice(spelt.MapDataset.source([1, -20]))
    with pytest.raises(IndexError, match="index -11 at position 0"):
        parent.slice(range(-11, 0))


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


# One rule for both forms, and Grain 0.2.18 where it has the same call.


def _shuffled(g, n=30):
    return g.MapDataset.range(n).seed(5).shuffle().map(lambda x: x * 3)


@pytest.mark.parametrize(
    "sl",
    [slice(2, 9, 3), slice(None), slice(None, None, -1), slice(-7, None), slice(25, 3, -4)],
    ids=str,
)
def test_range_indices_are_the_slice_in_every_epoch_and_grains_slice_in_the_first(sl):
    spelt_parent, grain_parent = _shuffled(spelt), _shuffled(grain)
    indices = range(*sl.indices(30))
    by_indices, by_slice = spelt_parent.slice(indices), spelt_parent.slice(sl)
    assert isinstance(by_indices, slice_lib.ReindexMapDataset)
    n = len(by_slice)
    assert len(by_indices) == n == len(grain_parent.slice(sl))
    everything = list(range(3 * n))
    assert [by_indices[k] for k in everything] == [by_slice[k] for k in everything]
    assert by_indices._getitems(everything) == by_slice._getitems(everything)  # pylint: disable=protected-access
    assert list(by_indices) == list(grain_parent.slice(sl))  # Grain 0.2.18, first epoch
    assert list(by_indices.repeat(2).to_iter_dataset()) == list(
        by_slice.repeat(2).to_iter_dataset()
    )


def test_pipeline_output_matches_grain_over_the_same_elements_listed():
    """Grain 0.2.18 has no slice(indices): the same elements as a Grain source of
    ``[parent[i] for i in indices]``, through the same operations after it."""
    indices = [29, 0, 0, 14, 31, -3, 7, 59, 2]
    grain_parent = _shuffled(grain)
    manual = grain.MapDataset.source([grain_parent[i] for i in indices])  # -3: epoch -1

    def after(ds):
        return ds.map(lambda x: x + 1).to_iter_dataset().batch(4)

    want = [b.tolist() for b in after(manual)]
    for options in (spelt.ReadOptions(num_threads=0), spelt.ReadOptions(num_threads=4)):
        got = _shuffled(spelt).slice(indices).map(lambda x: x + 1).to_iter_dataset(options)
        assert [b.tolist() for b in got.batch(4)] == want


def test_indices_beyond_the_parent_read_its_later_epoch_in_every_epoch():
    parent, grain_parent = _shuffled(spelt, 10), _shuffled(grain, 10)
    ds = parent.slice([12, 3, 25])
    want = [grain_parent[12], grain_parent[3], grain_parent[25]]  # Grain 0.2.18's ds[i]
    assert want != [grain_parent[2], grain_parent[3], grain_parent[5]]  # another permutation
    assert [ds[k] for k in range(9)] == want * 3
    assert list(ds.repeat(2).to_iter_dataset()) == want * 2


def test_filtered_parent_elements_are_none_and_skipped_as_in_grain():
    def even(x):
        return x % 2 == 0

    indices = [1, 2, 3, 4, 4, 9]
    grain_parent = grain.MapDataset.range(10).filter(even)
    ds = spelt.MapDataset.range(10).filter(even).slice(indices)
    assert [ds[k] for k in range(len(indices))] == [grain_parent[i] for i in indices]
    manual = grain.MapDataset.source([grain_parent[i] for i in indices])
    assert list(ds.to_iter_dataset()) == list(manual.to_iter_dataset()) == [2, 4, 4]


def test_slices_of_slices_compose():
    parent = _shuffled(spelt)
    ds = parent[1:25].slice([7, 0, 3, 22]).slice([2, 2, 0, -1])[::-1]
    first = [parent[1:25][i] for i in (7, 0, 3, 22)]
    want = [first[i] for i in (2, 2, 0, -1)][::-1]
    assert list(ds) == want
    assert [ds[k] for k in range(8)] == want * 2
    grain_first = [_shuffled(grain)[1:25][i] for i in (7, 0, 3, 22)]
    assert want == [grain_first[i] for i in (2, 2, 0, -1)][::-1]


# Batched reads.


class _CountingSource:
    def __init__(self, n=100):
        self.n = n
        self.batches = []
        self.singles = 0

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        self.singles += 1
        return int(index)

    def __getitems__(self, keys):
        self.batches.append([int(k) for k in keys])
        return [int(k) for k in keys]


def test_getitems_is_one_batched_read_of_the_source():
    source = _CountingSource()
    ds = spelt.MapDataset.source(source).slice([5, 3, 99, -1, 150]).map(lambda x: -x)
    assert ds._getitems([0, 1, 2, 3, 4, 5]) == [-5, -3, -99, -99, -50, -5]  # pylint: disable=protected-access
    assert source.batches == [[5, 3, 99, 99, 50, 5]] and source.singles == 0


def test_a_data_loader_over_a_slice_reads_in_batches():
    source = _CountingSource(1000)
    indices = np.random.default_rng(1).permutation(1000)[:400]
    loader = spelt.DataLoader(
        data_source=spelt.MapDataset.source(source).slice(indices),
        sampler=spelt.samplers.SequentialSampler(400, spelt.sharding.NoSharding()),
        operations=[spelt.transforms.Batch(100)],
    )
    assert np.concatenate(list(loader)).tolist() == indices.tolist()
    assert source.singles <= 1 and len(source.batches) <= 40


# Checkpoints.


@pytest.mark.parametrize("num_threads", [0, 4])
def test_resume_from_every_position_is_exact(num_threads):
    indices = np.random.default_rng(2).integers(-30, 60, size=23)
    ds = (
        _shuffled(spelt)
        .slice(indices)
        .repeat(2)
        .map(lambda x: x + 1)
        .to_iter_dataset(spelt.ReadOptions(num_threads=num_threads))
        .batch(4)
    )
    full = [b.tolist() for b in ds]
    assert len(full) == 12  # 46 elements
    it = iter(ds)
    for position in range(len(full) + 1):
        state = json.loads(json.dumps(it.get_state()))
        restored = iter(ds)
        restored.set_state(state)
        assert [b.tolist() for b in restored] == full[position:], position
        if position < len(full):
            assert next(it).tolist() == full[position]


def test_data_loader_checkpoint_over_a_slice_resumes_exactly():
    source = spelt.MapDataset.range(50).seed(1).shuffle().slice(list(range(49, -1, -3)))
    loader = spelt.DataLoader(
        data_source=source,
        sampler=spelt.samplers.IndexSampler(len(source), shuffle=True, seed=4, num_epochs=2),
        operations=[spelt.transforms.Batch(3)],
    )
    full = [b.tolist() for b in loader]
    it = iter(loader)
    for _ in range(5):
        next(it)
    restored = iter(loader)
    restored.set_state(it.get_state())
    assert [b.tolist() for b in restored] == full[5:]


# The indices are the caller's at the call.


def test_changing_the_indices_later_changes_nothing_also_in_copies():
    array = np.array([1, 2, 3], np.int64)
    values = [1, 2, 3]
    by_array = spelt.MapDataset.range(10).slice(array)
    by_list = spelt.MapDataset.range(10).slice(values)
    array[0] = values[0] = 9
    for ds in (by_array, by_list):
        assert list(ds) == [1, 2, 3]
        assert list(pickle.loads(pickle.dumps(ds))) == [1, 2, 3]  # what worker processes read
    options = spelt.MultiprocessingOptions(num_workers=2)
    assert list(by_array.map(_plus_one).to_iter_dataset().mp_prefetch(options)) == [2, 3, 4]


@pytest.mark.parametrize(
    "indices,error,match",
    [
        (spelt.MapDataset.source([1, 2.5]), TypeError, "position 1 is not an int: 2.5"),
        (spelt.MapDataset.range(3).filter(lambda x: x != 1), TypeError, "position 1 .* None"),
        (spelt.MapDataset.range(3).repeat(), ValueError, "must be finite"),
    ],
)
def test_bad_indices_from_map_datasets_and_ranges_are_named(indices, error, match):
    with pytest.raises(error, match=match):
        spelt.MapDataset.range(10).slice(indices)


def test_repr_names_the_class_as_grains_do():
    assert "ReindexMapDataset object at" in repr(spelt.MapDataset.range(3).slice([0]))
    assert "SliceMapDataset object at" in repr(grain.MapDataset.range(3).slice(slice(0, 1)))
