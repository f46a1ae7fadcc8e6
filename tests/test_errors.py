"""Bad input: invalid arguments, malformed or foreign states, failing sources and transforms.

Errors must be the documented type (ValueError for bad values and states), name what is wrong,
keep the user's own exception class, and never hang.
"""

import json
import subprocess
import sys
import textwrap

import grain
import numpy as np
import pytest

import pipelines
from pipelines import timeout  # noqa: F401
import spelt


# ---------------------------------------------------------------------------------------------
# Invalid sizes and counts.


def test_range_step_zero():
    with pytest.raises(ValueError):
        spelt.MapDataset.range(0, 10, 0)
    with pytest.raises(ValueError):
        grain.MapDataset.range(0, 10, 0)


@pytest.mark.parametrize("size", [0, -1, -100])
def test_batch_size_not_positive(size):
    with pytest.raises(ValueError, match="batch_size must be positive"):
        spelt.MapDataset.range(10).batch(size)
    with pytest.raises(ValueError, match="batch_size must be positive"):
        spelt.MapDataset.range(10).to_iter_dataset().batch(size)
    with pytest.raises(ValueError, match="batch_size must be positive"):
        spelt.MapDataset.range(10).to_iter_dataset().apply(spelt.transforms.Batch(size))
    with pytest.raises(ValueError, match="batch_size must be positive"):
        spelt.DataLoader(
            data_source=list(range(3)),
            sampler=spelt.samplers.SequentialSampler(3),
            operations=[spelt.transforms.Batch(size)],
        )
    with pytest.raises(ValueError):
        grain.MapDataset.range(10).batch(size)


@pytest.mark.parametrize("num_epochs", [0, -1])
def test_repeat_num_epochs_not_positive(num_epochs):
    with pytest.raises(ValueError, match="num_epochs must be positive"):
        spelt.MapDataset.range(10).repeat(num_epochs)
    with pytest.raises(ValueError):
        grain.MapDataset.range(10).repeat(num_epochs)


def test_repeat_of_infinite_dataset():
    with pytest.raises(ValueError, match="infinite"):
        spelt.MapDataset.range(10).repeat().repeat()
    with pytest.raises(ValueError):
        grain.MapDataset.range(10).repeat().repeat()


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_records=0),
        dict(num_records=-3),
        dict(num_records=5, num_epochs=0),
        dict(num_records=5, num_epochs=-2),
        dict(num_records=5, shuffle=True),
    ],
)
def test_sampler_arguments(kwargs):
    with pytest.raises(ValueError):
        spelt.samplers.IndexSampler(**kwargs)
    with pytest.raises(ValueError):
        grain.samplers.IndexSampler(**kwargs)


def test_data_loader_arguments():
    src, sampler = list(range(3)), spelt.samplers.SequentialSampler(3)
    with pytest.raises(ValueError, match="orker count"):
        spelt.DataLoader(data_source=src, sampler=sampler, worker_count=-1)
    with pytest.raises(ValueError, match="uffer size"):
        spelt.DataLoader(data_source=src, sampler=sampler, worker_buffer_size=-1)
    with pytest.raises(ValueError, match="shard options"):
        spelt.DataLoader(data_source=src, sampler=[spelt.RecordMetadata(0, 0)])
    # Any callable is a legacy operation on an iterator of Records (as in Grain); 42 is not.
    with pytest.raises(TypeError, match="transformations or callables"):
        spelt.DataLoader(data_source=src, sampler=sampler, operations=[42])


def test_batch_after_filter_on_map_dataset():
    with pytest.raises(ValueError, match="to_iter_dataset"):
        spelt.MapDataset.range(10).filter(lambda x: x > 2).batch(2)
    with pytest.raises(ValueError):
        grain.MapDataset.range(10).filter(lambda x: x > 2).batch(2)
    # The supported spelling works.
    assert [
        b.tolist()
        for b in spelt.MapDataset.range(6).filter(lambda x: x > 2).to_iter_dataset().batch(2)
    ] == [[3, 4], [5]]


def test_bad_arguments_types():
    with pytest.raises(TypeError):
        spelt.MapDataset.source(iter([1, 2]))
    with pytest.raises(TypeError):
        spelt.MapDataset.range(3).map(3)
    with pytest.raises(ValueError):
        spelt.MapDataset.range(3).slice(1)
    # A negative index reads an earlier epoch, as in Grain (range(3)[-4] is position 2 of
    # epoch -2); an empty or infinite dataset has none that the engine can address.
    assert spelt.MapDataset.range(3)[-1] == grain.MapDataset.range(3)[-1] == 2
    assert spelt.MapDataset.range(3)[-4] == grain.MapDataset.range(3)[-4] == 2
    for ds in (spelt.MapDataset.range(0), spelt.MapDataset.range(3).repeat()):
        with pytest.raises(IndexError):
            ds[-1]  # pylint: disable=pointless-statement


# ---------------------------------------------------------------------------------------------
# Seeds.

BAD_SEEDS = [-1, 2**32, 2**64]
SEEDED = {
    "seed": lambda s: spelt.MapDataset.range(5).seed(s),
    "shuffle": lambda s: spelt.MapDataset.range(5).shuffle(seed=s),
    "random_map": lambda s: spelt.MapDataset.range(5).random_map(lambda x, r: x, seed=s),
    "iter_seed": lambda s: spelt.MapDataset.range(5).to_iter_dataset().seed(s),
    "iter_random_map": lambda s: (
        spelt.MapDataset.range(5).to_iter_dataset().random_map(lambda x, r: x, seed=s)
    ),
    "index_sampler": lambda s: spelt.samplers.IndexSampler(5, shuffle=True, seed=s),
    "index_sampler_no_shuffle": lambda s: spelt.samplers.IndexSampler(5, seed=s),
    "load": lambda s: spelt.load(list(range(5)), shuffle=True, seed=s),
}


@pytest.mark.parametrize("seed", BAD_SEEDS)
@pytest.mark.parametrize("where", list(SEEDED))
def test_seed_out_of_range(where, seed):
    # ds.seed() and random_map take any non-negative int, as Grain does.
    if where in ("seed", "iter_seed", "random_map", "iter_random_map") and seed >= 0:
        assert SEEDED[where](seed) is not None
        return
    with pytest.raises(ValueError):
        SEEDED[where](seed)


@pytest.mark.parametrize("where", list(SEEDED))
def test_seed_bounds_accepted(where):
    for seed in (0, 2**32 - 1):
        assert SEEDED[where](seed) is not None


@pytest.mark.parametrize("seed", [1.5, "3", True, np.float64(2)])
def test_seed_wrong_type(seed):
    with pytest.raises(TypeError):
        spelt.MapDataset.range(5).seed(seed)
    with pytest.raises(TypeError):
        spelt.MapDataset.range(5).shuffle(seed=seed)
    with pytest.raises(TypeError):
        spelt.MapDataset.range(5).to_iter_dataset().random_map(lambda x, r: x, seed=seed)


def test_missing_seed():
    with pytest.raises(ValueError, match="seed"):
        spelt.MapDataset.range(5).shuffle()
    with pytest.raises(ValueError, match="seed"):
        spelt.MapDataset.range(5).random_map(lambda x, r: x)
    with pytest.raises(ValueError, match="seed"):
        spelt.MapDataset.range(5).to_iter_dataset().random_map(lambda x, r: x)


# ---------------------------------------------------------------------------------------------
# Batching mismatched elements.

MISMATCHED = {
    "shape_root": ([np.zeros(2), np.zeros(3)], "root", ("2", "3")),
    "shape_nested": ([{"a": [np.zeros(2)]}, {"a": [np.zeros(3)]}], "['a'][0]", ("2", "3")),
    "shape_deep": (
        [{"x": {"y": (1, np.ones((2, 2)))}}, {"x": {"y": (1, np.ones((2, 3)))}}],
        "['x']['y'][1]",
        ("2,2", "2,3"),
    ),
    "dict_keys": ([{"a": 1}, {"b": 1}], "root", ("a", "b")),
    "list_length": ([[1, 2], [1]], "root", ("2", "1")),
    "container_kind": ([{"a": 1}, [1]], "root", ("dict", "list")),
    "leaf_vs_list": ([{"k": 1}, {"k": [1]}], "['k']", ("int", "list")),
}


@pytest.mark.parametrize("name", list(MISMATCHED))
@pytest.mark.parametrize("where", ["map", "iter", "loader"])
def test_batch_mismatched_elements(name, where):
    elements, path, details = MISMATCHED[name]
    if where == "map":
        run = lambda: list(spelt.MapDataset.source(elements).batch(2))  # noqa: E731
    elif where == "iter":
        run = lambda: list(spelt.MapDataset.source(elements).to_iter_dataset().batch(2))  # noqa: E731
    else:
        run = lambda: list(
            spelt.DataLoader(  # noqa: E731
                data_source=elements,
                sampler=spelt.samplers.SequentialSampler(2),
                operations=[spelt.transforms.Batch(2)],
            )
        )
    with pytest.raises(ValueError) as info:
        run()
    message = str(info.value)
    assert path in message, message
    for detail in details:
        assert detail in message, message


@pytest.mark.parametrize(
    "elements",
    [
        [np.zeros(2, np.int32), np.zeros(2, np.float32)],
        [np.zeros(2, np.int32), np.zeros(2, np.int64)],
        [np.float32(1), np.float64(2)],
    ],
    ids=["int32_float32", "int32_int64", "f32_f64_scalars"],
)
def test_batch_promotes_mixed_dtypes_like_grain(elements):
    g = grain.MapDataset.source(elements).batch(2)[0]
    s = spelt.MapDataset.source(elements).batch(2)[0]
    pipelines.assert_same(s, g)


# ---------------------------------------------------------------------------------------------
# DataLoader states from another pipeline, and malformed states.


def _loader(source=None, sampler=None, worker_count=0):
    return spelt.DataLoader(
        data_source=list(range(10)) if source is None else source,
        sampler=sampler or spelt.samplers.IndexSampler(10, shuffle=True, num_epochs=1, seed=1),
        operations=[spelt.transforms.Batch(2)],
        worker_count=worker_count,
    )


@pytest.fixture
def good_state():
    it = iter(_loader())
    next(it)
    return it.get_state()


def _restore(loader, state):
    it = iter(loader)
    it.set_state(state)
    return list(it)


@pytest.mark.parametrize(
    "sampler",
    [
        spelt.samplers.IndexSampler(10, shuffle=True, num_epochs=1, seed=2),
        spelt.samplers.IndexSampler(10, shuffle=False, num_epochs=1, seed=1),
        spelt.samplers.IndexSampler(10, shuffle=True, num_epochs=2, seed=1),
        spelt.samplers.IndexSampler(
            10, spelt.sharding.ShardOptions(0, 2), shuffle=True, num_epochs=1, seed=1
        ),
        spelt.samplers.SequentialSampler(10),
    ],
    ids=repr,
)
def test_state_from_another_sampler(good_state, sampler):
    with pytest.raises(ValueError) as info:
        _restore(_loader(sampler=sampler), good_state)
    message = str(info.value)
    assert "Sampler" in message
    assert json.loads(good_state)["sampler"] in message
    assert repr(sampler) in message


@pytest.mark.parametrize(
    "source", [np.arange(10), tuple(range(10)), spelt.sources.RangeDataSource(0, 10, 1)], ids=repr
)
def test_state_from_another_source(good_state, source):
    with pytest.raises(ValueError) as info:
        _restore(_loader(source=source), good_state)
    message = str(info.value)
    assert "DataSource" in message
    assert "<class 'list'>" in message
    expected = (
        repr(source) if isinstance(source, spelt.sources.RangeDataSource) else str(type(source))
    )
    assert expected in message


def test_state_from_grain_of_another_pipeline_is_rejected():
    g_it = iter(
        grain.DataLoader(
            data_source=list(range(10)),
            sampler=grain.samplers.IndexSampler(10, shuffle=True, num_epochs=1, seed=3),
            worker_count=0,
        )
    )
    next(g_it)
    with pytest.raises(ValueError, match="Sampler"):
        _restore(_loader(), g_it.get_state())


def _mutated(state, mutate):
    d = json.loads(state)
    mutate(d)
    return json.dumps(d, indent=4).encode()


MALFORMED = {
    "not_json": lambda s: b"{not json",
    "empty": lambda s: b"",
    "not_utf8": lambda s: b"\xff\xfe\x00",
    "json_list": lambda s: b"[1, 2]",
    "json_number": lambda s: b"3",
    "dict_not_bytes": lambda s: {"version": 2},
    "missing_version": lambda s: _mutated(s, lambda d: d.pop("version")),
    "missing_last_seen": lambda s: _mutated(s, lambda d: d.pop("last_seen_indices")),
    "missing_worker_count": lambda s: _mutated(s, lambda d: d.pop("worker_count")),
    "missing_sampler": lambda s: _mutated(s, lambda d: d.pop("sampler")),
    "missing_data_source": lambda s: _mutated(s, lambda d: d.pop("data_source")),
    "version_3": lambda s: _mutated(s, lambda d: d.update(version=3)),
    "version_str": lambda s: _mutated(s, lambda d: d.update(version="2")),
    "last_seen_list": lambda s: _mutated(s, lambda d: d.update(last_seen_indices=[1])),
    "last_seen_str_value": lambda s: _mutated(s, lambda d: d.update(last_seen_indices={"0": "1"})),
    "last_seen_float_value": lambda s: _mutated(
        s, lambda d: d.update(last_seen_indices={"0": 1.0})
    ),
    "last_seen_bool_value": lambda s: _mutated(
        s, lambda d: d.update(last_seen_indices={"0": True})
    ),
    "last_seen_missing_worker": lambda s: _mutated(
        s, lambda d: d.update(last_seen_indices={"1": 1})
    ),
    "worker_count_str": lambda s: _mutated(s, lambda d: d.update(worker_count="0")),
    "worker_count_negative": lambda s: _mutated(s, lambda d: d.update(worker_count=-1)),
    "worker_count_without_entries": lambda s: _mutated(s, lambda d: d.update(worker_count=3)),
    "position_past_end": lambda s: _mutated(s, lambda d: d.update(last_seen_indices={"0": 100})),
    "position_before_start": lambda s: _mutated(
        s, lambda d: d.update(last_seen_indices={"0": -100})
    ),
    "sampler_not_str": lambda s: _mutated(s, lambda d: d.update(sampler=None)),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_loader_state(good_state, name):
    state = MALFORMED[name](good_state)
    it = iter(_loader())
    with pytest.raises((ValueError, IndexError)):  # IndexError past the end, as Grain
        it.set_state(state)
    # The iterator is still usable from where it was.
    assert len(list(it)) == 5


def test_loader_state_end_positions_are_valid(good_state):
    # Sanity check of the malformed cases above: the bounds themselves are accepted.
    last = _mutated(good_state, lambda d: d.update(last_seen_indices={"0": 9}))
    assert _restore(_loader(), last) == []
    first = _mutated(good_state, lambda d: d.update(last_seen_indices={"0": -1}))
    assert len(_restore(_loader(), first)) == 5


DATASET_STATES = {
    "to_iter": (
        lambda: spelt.MapDataset.range(10).to_iter_dataset(),
        [
            {},
            {"nxt": 3},
            {"next_index": "3"},
            {"next_index": 3.0},
            {"next_index": True},
            {"next_index": None},
            {"next_index": -1},
            {"next_index": 11},
            {"next_index": 2**70},
            [1],
            "next_index",
            None,
            b'{"next_index": 1}',
        ],
    ),
    "batched": (
        lambda: spelt.MapDataset.range(10).batch(3).to_iter_dataset(),
        [{"next_index": 5}, {"next_index": -1}],
    ),
    "iter_random_map": (
        lambda: spelt.MapDataset.range(10).to_iter_dataset().random_map(lambda x, r: x, seed=1),
        [
            {"parent": {"next_index": 3}},
            {"index_for_rng": 3},
            {"parent": {"next_index": 3}, "index_for_rng": "a"},
            {"parent": {"next_index": 30}, "index_for_rng": 3},
            {"parent": 3, "index_for_rng": 3},
        ],
    ),
    "iter_map_with_index": (
        lambda: spelt.MapDataset.range(10).to_iter_dataset().map_with_index(lambda i, x: x),
        [{"parent": {"next_index": 3}}, {"parent": {"next_index": 3}, "counter": None}],
    ),
    "flat_map": (
        lambda: pipelines.DATASET_PIPELINES["flat_map"]["build"](spelt),
        [
            {"parent": {"next_index": 3}},
            {"next_index_in_buffer": 1},
            {"parent": {"next_index": 3}, "next_index_in_buffer": -1},
            {"parent": {"next_index": 99}, "next_index_in_buffer": 0},
        ],
    ),
}


@pytest.mark.parametrize(
    "name,index", [(n, i) for n, (_, ss) in DATASET_STATES.items() for i in range(len(ss))]
)
def test_malformed_dataset_state(name, index):
    build, states = DATASET_STATES[name]
    it = iter(build())
    with pytest.raises((ValueError, IndexError)):  # IndexError past the end, as Grain
        it.set_state(states[index])


def test_dataset_state_error_names_the_field():
    it = iter(spelt.MapDataset.range(10).to_iter_dataset())
    with pytest.raises(IndexError, match="next_index"):  # Grain's error
        it.set_state({"next_index": 11})
    with pytest.raises(ValueError, match="next_index"):
        it.set_state({})
    it = iter(spelt.MapDataset.range(10).to_iter_dataset().random_map(lambda x, r: x, seed=1))
    with pytest.raises(ValueError, match="index_for_rng"):
        it.set_state({"parent": {"next_index": 1}})


def test_negative_index_for_rng_is_rejected():
    it = iter(
        spelt.MapDataset.range(10)
        .to_iter_dataset()
        .random_map(lambda x, r: int(r.integers(1000)), seed=1)
    )
    with pytest.raises(ValueError):
        it.set_state({"parent": {"next_index": 3}, "index_for_rng": -1})
        list(it)


def test_dataset_state_from_another_pipeline_shape_is_rejected():
    it = iter(spelt.MapDataset.range(10).to_iter_dataset().random_map(lambda x, r: x, seed=1))
    with pytest.raises(ValueError):
        it.set_state({"next_index": 2})  # a plain to_iter_dataset state
    it = iter(spelt.MapDataset.range(10).to_iter_dataset())
    with pytest.raises(ValueError):
        it.set_state({"parent": {"next_index": 2}, "index_for_rng": 2})


# ---------------------------------------------------------------------------------------------
# Failing sources and user code.


class SourceError(Exception):
    pass


class FailingSource:
    def __init__(self, n=10, bad=6, exc=SourceError):
        self._n, self._bad, self._exc = n, bad, exc

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        if i == self._bad:
            raise self._exc(f"cannot read {i}")
        return i

    def __repr__(self):
        return f"FailingSource(bad={self._bad})"


def _note(e):
    return "\n".join(getattr(e, "__notes__", []))


FAILING_SOURCE_PIPELINES = {
    "iterate": lambda src: list(spelt.MapDataset.source(src)),
    "getitem": lambda src: spelt.MapDataset.source(src)[6],
    "getitem_next_epoch": lambda src: spelt.MapDataset.source(src).map(lambda x: x)[16],
    "shuffled": lambda src: list(spelt.MapDataset.source(src).seed(1).shuffle()),
    "threads_batch": lambda src: list(
        spelt.MapDataset.source(src)
        .seed(1)
        .shuffle()
        .to_iter_dataset(spelt.ReadOptions(num_threads=8))
        .batch(3)
    ),
    "loader": lambda src: list(
        spelt.DataLoader(
            data_source=src,
            sampler=spelt.samplers.IndexSampler(10, shuffle=True, num_epochs=1, seed=3),
            operations=[spelt.transforms.Batch(4)],
            worker_count=0,
        )
    ),
    "loader_workers": lambda src: list(
        spelt.DataLoader(
            data_source=src,
            sampler=spelt.samplers.IndexSampler(10, shuffle=True, num_epochs=1, seed=3),
            operations=[spelt.transforms.Batch(4)],
            worker_count=3,
        )
    ),
}


@pytest.mark.parametrize("exc", [SourceError, KeyError, IndexError, OSError])
@pytest.mark.parametrize("name", list(FAILING_SOURCE_PIPELINES))
def test_source_error_keeps_type_and_names_record(name, exc):
    with pytest.raises(exc) as info:
        FAILING_SOURCE_PIPELINES[name](FailingSource(exc=exc))
    assert "cannot read 6" in str(info.value)
    note = _note(info.value)
    assert "record 6" in note, note
    assert "FailingSource(bad=6)" in note, note


def test_source_error_note_names_record_key_not_position():
    sampler = spelt.samplers.IndexSampler(10, shuffle=True, num_epochs=1, seed=3)
    position = [sampler[i].record_key for i in range(10)].index(2)
    assert position != 2
    with pytest.raises(SourceError) as info:
        list(spelt.DataLoader(data_source=FailingSource(bad=2), sampler=sampler, worker_count=0))
    assert "record 2" in _note(info.value)
    assert f"record {position}" not in _note(info.value)


class UserError(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def _raise_at_3(x):
    if (x if np.ndim(x) == 0 else np.asarray(x).ravel()[0]) == 3:
        raise UserError("user code failed", code=42)
    return x


class RaisingSplit(spelt.transforms.FlatMap):
    max_fan_out = 2

    def flat_map(self, x):
        return [_raise_at_3(x)]


class RaisingMapDataset(spelt.MapDataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return _raise_at_3(i)


class RaisingIterator(spelt.DatasetIterator):
    def __init__(self):
        super().__init__()
        self._i = 0

    def __next__(self):
        self._i += 1
        return _raise_at_3(self._i)

    def get_state(self):
        return {"i": self._i}

    def set_state(self, state):
        self._i = state["i"]


class RaisingIterDataset(spelt.IterDataset):
    def __iter__(self):
        return RaisingIterator()


def _loader_with(op):
    return spelt.DataLoader(
        data_source=list(range(8)),
        sampler=spelt.samplers.SequentialSampler(8),
        operations=[op],
        worker_count=0,
    )


class _M(spelt.transforms.Map):
    def map(self, x):
        return _raise_at_3(x)


class _R(spelt.transforms.RandomMap):
    def random_map(self, x, rng):
        return _raise_at_3(x)


class _F(spelt.transforms.Filter):
    def filter(self, x):
        return _raise_at_3(x) >= 0


RAISING = {
    "map": lambda: list(spelt.MapDataset.range(8).map(_raise_at_3)),
    "map_getitem": lambda: spelt.MapDataset.range(8).map(_raise_at_3)[3],
    "random_map": lambda: list(
        spelt.MapDataset.range(8).random_map(lambda x, r: _raise_at_3(x), seed=1)
    ),
    "map_with_index": lambda: list(
        spelt.MapDataset.range(8).map_with_index(lambda i, x: _raise_at_3(x))
    ),
    "filter": lambda: list(spelt.MapDataset.range(8).filter(lambda x: _raise_at_3(x) >= 0)),
    "batch_fn": lambda: list(
        spelt.MapDataset.range(8).batch(2, batch_fn=lambda xs: _raise_at_3(xs[-1]))
    ),
    "iter_map": lambda: list(spelt.MapDataset.range(8).to_iter_dataset().map(_raise_at_3)),
    "iter_map_threads": lambda: list(
        spelt.MapDataset.range(100).map(_raise_at_3).to_iter_dataset(spelt.ReadOptions(16, 64))
    ),
    "iter_filter": lambda: list(
        spelt.MapDataset.range(8).to_iter_dataset().filter(lambda x: _raise_at_3(x) >= 0)
    ),
    "iter_random_map": lambda: list(
        spelt.MapDataset.range(8).to_iter_dataset().random_map(lambda x, r: _raise_at_3(x), seed=1)
    ),
    "iter_map_with_index": lambda: list(
        spelt.MapDataset.range(8).to_iter_dataset().map_with_index(lambda i, x: _raise_at_3(x))
    ),
    "iter_batch_fn": lambda: list(
        spelt.MapDataset.range(8).to_iter_dataset().batch(4, batch_fn=lambda xs: _raise_at_3(xs[3]))
    ),
    "flat_map": lambda: list(
        spelt.experimental.FlatMapIterDataset(
            spelt.MapDataset.range(8).to_iter_dataset(), RaisingSplit()
        )
    ),
    "custom_map_dataset": lambda: list(RaisingMapDataset().map(lambda x: x)),
    "custom_iter_dataset": lambda: list(RaisingIterDataset().map(lambda x: x).batch(2)),
    "loader_map": lambda: list(_loader_with(_M())),
    "loader_random_map": lambda: list(_loader_with(_R())),
    "loader_filter": lambda: list(_loader_with(_F())),
    "loader_flat_map": lambda: list(_loader_with(RaisingSplit())),
    "loader_batch_fn": lambda: list(
        _loader_with(spelt.transforms.Batch(4, batch_fn=lambda xs: _raise_at_3(xs[3])))
    ),
}


@pytest.mark.parametrize("name", list(RAISING))
def test_user_exception_class_propagates(name):
    with pytest.raises(UserError, match="user code failed") as info:
        RAISING[name]()
    assert type(info.value) is UserError
    assert info.value.code == 42


def test_error_in_grain_and_spelt_is_the_same_class():
    for g in (grain, spelt):
        with pytest.raises(UserError):
            list(g.MapDataset.range(8).to_iter_dataset().map(_raise_at_3))
        with pytest.raises(KeyError):
            list(g.MapDataset.source(FailingSource(exc=KeyError)))


class FlakySource(FailingSource):
    """Fails the first read of record 6 only (a transient error)."""

    def __getitem__(self, i):
        if i == self._bad:
            self._bad = None
            raise SourceError("transient")
        return i


def test_resume_after_error_from_last_state():
    ds = spelt.MapDataset.source(FlakySource()).to_iter_dataset().batch(2)
    it = iter(ds)
    assert [b.tolist() for b in (next(it), next(it), next(it))] == [[0, 1], [2, 3], [4, 5]]
    state = it.get_state()
    with pytest.raises(SourceError, match="transient"):
        next(it)
    it2 = iter(ds)
    it2.set_state(state)
    assert [b.tolist() for b in it2] == [[6, 7], [8, 9]]


# ---------------------------------------------------------------------------------------------
# No hangs: errors under read-ahead threads, abandoned iterators, interpreter exit.

HANG_SCRIPT = textwrap.dedent("""
    import spelt

    class Bad(Exception):
      pass

    def boom(x):
      if x == 50:
        raise Bad()
      return x

    keep = []
    # Errors under read-ahead threads, several times, iterators kept alive.
    ds = spelt.MapDataset.range(1000).map(boom).to_iter_dataset(
        spelt.ReadOptions(num_threads=16, prefetch_buffer_size=64))
    for _ in range(3):
      it = iter(ds)
      try:
        list(it)
        raise SystemExit("no error raised")
      except Bad:
        pass
      keep.append(it)
    # A native pipeline with many threads, abandoned after one element, left alive.
    native = spelt.MapDataset.range(10**6).seed(1).shuffle().batch(10).to_iter_dataset(
        spelt.ReadOptions(num_threads=16, prefetch_buffer_size=500))
    for _ in range(3):
      it = iter(native)
      next(it)
      it.start_prefetch()
      keep.append(it)
    # Closed mid-way.
    it = iter(native)
    next(it)
    it.close()
    # A DataLoader with workers failing in a transform.
    class M(spelt.transforms.Map):
      def map(self, x):
        return boom(x)
    loader = spelt.DataLoader(
        data_source=list(range(200)),
        sampler=spelt.samplers.IndexSampler(200, shuffle=True, num_epochs=1, seed=1),
        operations=[M(), spelt.transforms.Batch(8)], worker_count=4)
    it = iter(loader)
    try:
      list(it)
      raise SystemExit("no error raised")
    except Bad:
      pass
    keep.append(it)
    print("done", flush=True)
""")


def test_no_hang_on_errors_and_exit_with_live_iterators():
    proc = subprocess.run(
        [sys.executable, "-c", HANG_SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "done"


@pytest.mark.parametrize(
    "make,what",
    [
        (lambda: spelt.MapDataset.range(4).batch(2.0), "batch: batch_size"),
        (lambda: spelt.MapDataset.range(4).to_iter_dataset().batch("2"), "batch: batch_size"),
        (lambda: spelt.MapDataset.range(4).repeat(1.5), "repeat: num_epochs"),
        (lambda: spelt.samplers.IndexSampler(5.0), "IndexSampler: num_records"),
        (lambda: spelt.samplers.IndexSampler(5, num_epochs=1.5), "IndexSampler: num_epochs"),
        (lambda: spelt.samplers.SequentialSampler(None), "SequentialSampler: num_records"),
        (
            lambda: spelt.DataLoader(data_source=None, sampler=spelt.samplers.IndexSampler(5)),
            "DataLoader: data_source",
        ),
    ],
)
def test_wrong_argument_types_raise_a_type_error_naming_the_argument(make, what):
    with pytest.raises(TypeError, match=what) as e:
        make()
    assert "incompatible function arguments" not in str(e.value)
