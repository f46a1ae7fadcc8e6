"""Grain's legacy grain.python names against Grain 0.2.18: the *Operation classes called
directly and in a DataLoader (outputs, states after every element, restores across the two
libraries, 0 and 2 workers), spelt.python / spelt.python.experimental exports."""

from __future__ import annotations

import collections
import dataclasses
import re

import grain
import grain.python
import numpy as np
import pytest

import pipelines
import spelt
import spelt.python
import spelt.python.experimental
from pipelines import assert_same, timeout  # noqa: F401

Point = collections.namedtuple("Point", "x y")


def _records(g, values):
    return [
        g.python.Record(g.python.RecordMetadata(index=i, record_key=10 - i), v)
        for i, v in enumerate(values)
    ]


def _as_tuples(records):
    return [(r.metadata.index, r.metadata.record_key, r.data) for r in records]


def _plus_one(x):
    return x + 1


def _is_even(x):
    return x % 2 == 0


def _noise(x, rng):
    return x * 1000 + int(rng.integers(0, 1000))


DIRECT = {
    "map": (lambda g: g.python.MapOperation(map_function=_plus_one), [1, 2, 3, 4]),
    "filter": (lambda g: g.python.FilterOperation(condition_function=_is_even), [1, 2, 3, 4]),
    "batch": (lambda g: g.python.BatchOperation(batch_size=2), [1, 2, 3, 4, 5]),
    "batch_drop": (lambda g: g.python.BatchOperation(2, drop_remainder=True), [1, 2, 3, 4, 5]),
    "batch_dicts": (
        lambda g: g.python.BatchOperation(batch_size=2),
        [{"a": np.array([1, 2], np.int32)}, {"a": np.array([3, 4], np.int32)}],
    ),
    "batch_tuples": (
        lambda g: g.python.BatchOperation(batch_size=2),
        [(1, 10.0, "text"), (2, 20.0, "text_2")],
    ),
    "batch_namedtuples": (
        lambda g: g.python.BatchOperation(batch_size=2),
        [Point(1, "a"), Point(2, "bb")],
    ),
    "batch_fn": (lambda g: g.python.BatchOperation(2, batch_fn=list), [1, 2, 3]),
}


@pytest.mark.parametrize("name", list(DIRECT))
def test_operation_called_directly_matches_grain(name):
    build, values = DIRECT[name]
    g_out = list(build(grain)(iter(_records(grain, values))))
    s_out = list(build(spelt)(iter(_records(spelt, values))))
    assert [type(r).__name__ for r in s_out] == ["Record"] * len(g_out)
    assert_same(_as_tuples(s_out), _as_tuples(g_out))


def test_random_map_operation_uses_record_rng():
    def with_rngs(g):
        return [
            g.python.Record(g.python.RecordMetadata(i, rng=np.random.default_rng(i)), i)
            for i in range(4)
        ]

    op = spelt.python.RandomMapOperation(random_map_function=_noise)
    g_op = grain.python.RandomMapOperation(random_map_function=_noise)
    assert _as_tuples(op(iter(with_rngs(spelt)))) == _as_tuples(g_op(iter(with_rngs(grain))))


def test_operation_errors_match_grain():
    for g in (grain, spelt):
        with pytest.raises(ValueError, match="batch_size must be a positive integer. Got 0."):
            g.python.BatchOperation(batch_size=0)
        mismatch = _records(g, [[1, 2], [3, 4, 5]])
        message = re.escape(
            "Record structures do not match. Record at position 0 has structure [1, 2], while"
            " records at positions [1] have structures [[3, 4, 5]]."
        )
        with pytest.raises(TypeError, match=message):
            list(g.python.BatchOperation(batch_size=2)(iter(mismatch)))
        with pytest.raises(ValueError, match="error when calling map function") as info:
            list(g.python.MapOperation(lambda x: 1 / 0)(iter(_records(g, [1]))))
        assert isinstance(info.value.__cause__, ZeroDivisionError)


# DataLoader pipelines with operations: build(g, worker_count).


@dataclasses.dataclass
class _Tag:
    """A user operation (Grain's Operation protocol): pairs data with its metadata."""

    def __call__(self, records):
        for r in records:
            yield dataclasses.replace(
                r, data=(r.metadata.index, r.metadata.record_key, np.asarray(r.data).tolist())
            )


class _PairBatch(grain.python.BatchOperation):
    """A BatchOperation subclass: Grain runs it as an operation, not as a Batch."""


class _SpeltPairBatch(spelt.python.BatchOperation):
    pass


def _ops(g, names):
    user = pipelines.user_classes(g)
    table = {
        "map": lambda: g.python.MapOperation(map_function=_plus_one),
        "filter": lambda: g.python.FilterOperation(condition_function=_is_even),
        "random_map": lambda: g.python.RandomMapOperation(random_map_function=_noise),
        "batch2": lambda: g.python.BatchOperation(batch_size=2),
        "batch3d": lambda: g.python.BatchOperation(batch_size=3, drop_remainder=True),
        "triple": user.Triple,
        "tag": _Tag,
        "subclass_batch": lambda: (_PairBatch if g is grain else _SpeltPairBatch)(batch_size=2),
    }
    return [table[n]() for n in names]


def _loader(g, names, worker_count=0, n=20, seed=4, shard=None):
    so = g.sharding.NoSharding() if shard is None else g.sharding.ShardOptions(*shard)
    sampler = g.samplers.IndexSampler(n, shard_options=so, shuffle=True, num_epochs=1, seed=seed)
    return g.DataLoader(
        data_source=list(range(n)),
        sampler=sampler,
        operations=(op for op in _ops(g, names)),  # a generator, read once
        worker_count=worker_count,
    )


LOADERS = {
    "map_filter_batch": ("map", "filter", "batch2"),
    "random_map_batch": ("random_map", "batch3d"),
    "mixed_with_transforms": ("triple", "map", "batch2", "map"),
    "user_operation": ("map", "tag"),
    "user_operation_after_batch": ("batch2", "tag"),
    "subclass_batch": ("filter", "subclass_batch"),
}


@pytest.mark.parametrize("name", list(LOADERS))
def test_data_loader_operations_match_grain(name):
    names = LOADERS[name]
    g_out, g_states = pipelines.run_with_states(iter(_loader(grain, names)), None)
    s_out, s_states = pipelines.run_with_states(iter(_loader(spelt, names)), None)
    assert g_out
    assert_same(s_out, g_out)
    assert s_states == g_states
    for k in range(len(s_states)):  # each library restores the other's state
        it = iter(_loader(spelt, names))
        it.set_state(g_states[k])
        assert_same(list(it), g_out[k:])
        it = iter(_loader(grain, names))
        it.set_state(s_states[k])
        assert_same(list(it), g_out[k:])
    if "tag" not in names and "subclass_batch" not in names:  # Python stream stages stay here
        w_out, _ = pipelines.run_with_states(iter(_loader(spelt, names, worker_count=2)), None)
        assert_same(w_out, s_out)


def test_sharded_user_operation_sees_sampler_metadata():
    names = ("tag",)
    # 21 records: every shard even (Grain drops part of an uneven remainder; Spelt does not).
    g_out = list(_loader(grain, names, n=21, shard=(1, 3)))
    s_out = list(_loader(spelt, names, n=21, shard=(1, 3)))
    assert_same(s_out, g_out)


def test_map_operation_error_in_data_loader():
    def boom(x):
        raise KeyError(x)

    loader = spelt.DataLoader(
        data_source=[1, 2],
        sampler=spelt.samplers.SequentialSampler(2, spelt.sharding.NoSharding()),
        operations=[spelt.python.MapOperation(boom)],
    )
    with pytest.raises(ValueError, match="error when calling map function"):
        list(loader)
    with pytest.raises(TypeError, match="transformations or callables"):
        spelt.DataLoader(
            data_source=[1, 2],
            sampler=spelt.samplers.SequentialSampler(2, spelt.sharding.NoSharding()),
            operations=[spelt.transforms.Batch(1), 42],
        )


def test_legacy_module_names():
    public = {n for n in dir(grain.python) if not n.startswith("_")}
    public -= {"PyGrainCheckpointSave", "PyGrainCheckpointRestore"}  # need orbax in both
    missing = sorted(n for n in public if not hasattr(spelt.python, n))
    assert missing == []
    assert spelt.python.InMemoryDataSource is spelt.sources.SharedMemoryDataSource
    assert spelt.python.SharedMemoryArray is spelt.multiprocessing.SharedMemoryArray
    assert spelt.python.ArrayRecordDataSource is spelt.sources.ArrayRecordDataSource
    assert spelt.python.experimental.__all__ == spelt.experimental.__all__
    for name in spelt.experimental.__all__:
        assert getattr(spelt.python.experimental, name) is getattr(spelt.experimental, name)
    assert spelt.python.experimental.ElasticIterator is spelt.experimental.ElasticIterator
