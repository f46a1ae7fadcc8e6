"""DataLoader and load() against Grain 0.2.18 (worker_count=0): same outputs, same state bytes."""

import itertools
import json

import grain
import grain.python as grain_python
import numpy as np
import pytest

import pipelines
from pipelines import assert_same, both, timeout  # noqa: F401
import spelt
import spelt.python as spelt_python
from spelt import _callables


def make_loader(g, n, *, sampler="index", shard=None, ops=(), worker_count=0, **sampler_kw):
    return pipelines._loader(
        g, n=n, sampler=sampler, shard=shard, ops=ops, worker_count=worker_count, **sampler_kw
    )


def run_both(build, limit=None):
    """Runs build(grain) and build(spelt); asserts equal outputs and equal state bytes after
    every step; returns spelt's outputs."""
    g_out, g_states = pipelines.run_with_states(iter(build(grain)), limit)
    s_out, s_states = pipelines.run_with_states(iter(build(spelt)), limit)
    assert_same(s_out, g_out)
    assert len(s_states) == len(g_states)
    for k, (s, g) in enumerate(zip(s_states, g_states)):
        assert isinstance(s, bytes)
        assert s == g, f"state after {k} elements:\n{s.decode()}\n!=\n{g.decode()}"
    return s_out


SHARDS = [None, (0, 1), (0, 3), (2, 3), (1, 4, True), (3, 4, True), (0, 2, True), (4, 5)]
OPS = [
    (),
    ("batch3",),
    ("map", "batch4d"),
    ("random_map",),
    ("filter", "batch2"),
    ("map", "random_map", "filter", "batch3d"),
]


@pytest.mark.parametrize("n", [1, 7, 23])
@pytest.mark.parametrize("shuffle,num_epochs", [(False, 1), (True, 1), (True, 3), (False, 2)])
@pytest.mark.parametrize("shard", SHARDS, ids=str)
def test_index_sampler_loader_matches_grain(n, shuffle, num_epochs, shard):
    if shard is not None and n < shard[1]:
        n = shard[1] + 1  # Grain rejects an empty shard block
    ops = OPS[(n + num_epochs + (0 if shard is None else shard[0])) % len(OPS)]
    run_both(
        lambda g: make_loader(
            g, n, shuffle=shuffle, num_epochs=num_epochs, seed=17, shard=shard, ops=ops
        )
    )


@pytest.mark.parametrize("ops", OPS, ids=str)
def test_index_sampler_loader_ops_match_grain(ops):
    run_both(lambda g: make_loader(g, 29, shuffle=True, num_epochs=2, seed=3, ops=ops))
    run_both(
        lambda g: make_loader(g, 29, shuffle=True, num_epochs=2, seed=3, shard=(1, 3), ops=ops)
    )


@pytest.mark.parametrize("shard", [None, (0, 2), (1, 2), (2, 3, True), (0, 4, True)], ids=str)
@pytest.mark.parametrize("seed", [None, 5])
def test_sequential_sampler_loader_matches_grain(shard, seed):
    ops = ("random_map", "batch2") if seed is not None else ("map", "batch2d")
    run_both(lambda g: make_loader(g, 11, sampler="sequential", shard=shard, seed=seed, ops=ops))


def test_infinite_index_sampler_matches_grain():
    run_both(lambda g: make_loader(g, 5, shuffle=True, seed=1, ops=("batch2",)), limit=15)


def test_random_map_rng_is_philox_keyed_by_seed_plus_global_index():
    class Draw(spelt.transforms.RandomMap):
        def random_map(self, x, rng):
            return (x, rng.integers(0, 2**40, size=2))

    seed, n = 1234, 9
    shard = spelt.sharding.ShardOptions(1, 3)
    sampler = spelt.samplers.IndexSampler(
        n, shard_options=shard, shuffle=True, num_epochs=2, seed=seed
    )
    out = list(
        spelt.DataLoader(
            data_source=list(range(n)), sampler=sampler, operations=[Draw()], worker_count=0
        )
    )
    assert len(out) == 6
    for local, (x, draw) in enumerate(out):
        g = local * 3 + 1
        assert x == sampler[g].record_key
        expected = np.random.Generator(np.random.Philox(key=seed + g)).integers(0, 2**40, size=2)
        np.testing.assert_array_equal(draw, expected)


def test_random_map_without_seed_gets_none():
    class Check(spelt.transforms.RandomMap):
        def random_map(self, x, rng):
            return rng is None

    assert all(
        spelt.DataLoader(
            data_source=list(range(4)),
            sampler=spelt.samplers.SequentialSampler(4),
            operations=[Check()],
            worker_count=0,
        )
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(num_epochs=2),
        dict(num_epochs=2, shuffle=True, seed=3),
        dict(num_epochs=1, batch_size=4),
        dict(num_epochs=3, shuffle=True, seed=9, batch_size=4, drop_remainder=True),
        dict(num_epochs=2, shard_options="shard", batch_size=2, shuffle=True, seed=2),
    ],
)
def test_load_matches_grain(kwargs):
    def build(g):
        kw = dict(kwargs)
        if kw.get("shard_options") == "shard":
            kw["shard_options"] = g.sharding.ShardOptions(2, 3)
        u = pipelines.user_classes(g)
        return g.load(
            list(range(13)),
            transformations=[u.Triple(), u.Noise()] if kw.get("seed") is not None else [u.Triple()],
            **kw,
        )

    run_both(build, limit=None if kwargs.get("num_epochs") else 30)
    assert isinstance(build(spelt), spelt.DataLoader)


def test_sources_and_custom_sampler_match_grain():
    run_both(
        lambda g: g.DataLoader(
            data_source=g.sources.RangeDataSource(5, 35, 3),
            sampler=g.samplers.IndexSampler(10, shuffle=True, num_epochs=2, seed=8),
            operations=[g.transforms.Batch(3)],
            worker_count=0,
        )
    )
    run_both(
        lambda g: g.DataLoader(
            data_source=np.arange(30, dtype=np.float32).reshape(10, 3),
            sampler=g.samplers.IndexSampler(10, num_epochs=1),
            operations=[g.transforms.Batch(4)],
            worker_count=0,
        )
    )

    class EveryOther:
        """A custom sampler: record keys 0, 2, 4, ... of 10 records."""

        def __init__(self, g):
            self._g = g

        def __len__(self):
            return 5

        def __getitem__(self, index):
            if not 0 <= index < 5:
                raise IndexError(index)
            return self._g.RecordMetadata(index=index, record_key=2 * index)

        def __repr__(self):
            return "EveryOther()"

    out = run_both(
        lambda g: g.DataLoader(
            data_source=list(range(100, 110)),
            sampler=EveryOther(g),
            shard_options=g.sharding.NoSharding(),
            worker_count=0,
        )
    )
    assert out == [100, 102, 104, 106, 108]


def test_batch_fn_in_loader():
    def build(g):
        return g.DataLoader(
            data_source=[{"a": i} for i in range(10)],
            sampler=g.samplers.IndexSampler(10, num_epochs=1, shuffle=True, seed=1),
            operations=[g.transforms.Batch(3, batch_fn=lambda xs: [x["a"] for x in xs])],
            worker_count=0,
        )

    out = run_both(build)
    assert [len(b) for b in out] == [3, 3, 3, 1]


def test_record_structures_are_batched_like_grain():
    def build(g):
        src = [
            {"id": i, "name": f"n{i}", "vec": np.full(2, i, np.int32), "t": (i, float(i))}
            for i in range(8)
        ]
        return g.DataLoader(
            data_source=src,
            sampler=g.samplers.SequentialSampler(8),
            operations=[g.transforms.Batch(3)],
            worker_count=0,
        )

    run_both(build)


def test_str_of_iterator_matches_grain():
    def build(g):
        return make_loader(g, 10, shuffle=True, num_epochs=1, seed=1, ops=("batch3",))

    g_it, s_it = both(lambda g: iter(build(g)))
    for _ in range(3):
        assert str(s_it) == str(g_it)
        assert str(s_it) == f"PyGrainDatasetIterator(state={s_it.get_state().decode()})"
        next(g_it), next(s_it)
    state = json.loads(str(s_it)[len("PyGrainDatasetIterator(state=") : -1])
    assert state["last_seen_indices"] == {"0": 8}
    assert state["sampler"].startswith("IndexSampler(num_records=10, ")


def test_state_layout():
    it = iter(
        make_loader(spelt, 10, shuffle=True, num_epochs=1, seed=1, shard=(1, 3), ops=("batch2",))
    )
    state = json.loads(it.get_state())
    assert state == {
        "version": 2,
        "last_seen_indices": {"0": -2},
        "last_worker_index": -1,
        "worker_count": 0,
        "sampler": repr(
            spelt.samplers.IndexSampler(
                10,
                shard_options=spelt.sharding.ShardOptions(1, 3),
                shuffle=True,
                num_epochs=1,
                seed=1,
            )
        ),
        "data_source": "<class 'list'>",
    }
    next(it)  # records of global indices 1 and 4
    assert json.loads(it.get_state())["last_seen_indices"] == {"0": 4}
    assert it.get_state() == json.dumps(json.loads(it.get_state()), indent=4).encode()


def test_legacy_python_aliases():
    assert spelt_python.MapTransform is spelt.transforms.Map
    assert spelt_python.RandomMapTransform is spelt.transforms.RandomMap
    assert spelt_python.FilterTransform is spelt.transforms.Filter
    assert spelt_python.MapWithIndexTransform is spelt.transforms.MapWithIndex
    assert spelt_python.PyGrainDatasetIterator is spelt.DataLoaderIterator
    for name in [
        "DataLoader",
        "IndexSampler",
        "SequentialSampler",
        "ShardOptions",
        "NoSharding",
        "Batch",
        "MapDataset",
        "IterDataset",
        "DatasetIterator",
        "RecordMetadata",
        "Record",
        "ReadOptions",
        "MultiprocessingOptions",
        "load",
        "RangeDataSource",
        "INDEX",
        "RECORD_KEY",
        "EPOCH",
        "SEED",
        "RECORD",
    ]:
        assert hasattr(spelt_python, name), name

    def build(gp):
        class Double(gp.MapTransform):
            def map(self, x):
                return 2 * x

        class Jitter(gp.RandomMapTransform):
            def random_map(self, x, rng):
                return x + rng.random()

        class Keep(gp.FilterTransform):
            def filter(self, x):
                return x % 3 != 0

        return gp.DataLoader(
            data_source=list(range(12)),
            sampler=gp.IndexSampler(12, gp.ShardOptions(0, 2), shuffle=True, num_epochs=1, seed=4),
            operations=[Double(), Jitter(), Keep(), gp.Batch(2)],
            worker_count=0,
        )

    g_it, s_it = iter(build(grain_python)), iter(build(spelt_python))
    assert isinstance(s_it, spelt_python.PyGrainDatasetIterator)
    g_out, s_out = list(g_it), list(s_it)
    assert len(s_out) >= 2
    assert_same(s_out, g_out)
    assert s_it.get_state() == g_it.get_state()


def test_worker_count_does_not_change_output():
    def build(workers):
        return make_loader(
            spelt,
            23,
            shuffle=True,
            num_epochs=2,
            seed=3,
            worker_count=workers,
            ops=("map", "random_map", "filter", "batch3"),
        )

    base = list(build(0))
    assert base
    for workers in (1, 2, 5):
        loader = build(workers)
        assert loader.multiprocessing_options.num_workers == workers
        assert_same(list(loader), base)


def test_iterators_are_independent():
    loader = make_loader(spelt, 10, shuffle=True, num_epochs=1, seed=2)
    a, b = iter(loader), iter(loader)
    first = [next(a) for _ in range(4)]
    assert [next(b) for _ in range(4)] == first
    assert list(a) == list(b) and len(first) == 4
    assert list(loader) == list(loader)


def test_start_prefetch_and_close():
    it = iter(make_loader(spelt, 6, num_epochs=1))
    it.start_prefetch()
    it.start_prefetch()
    assert next(it) == 0
    it.close()
    it.close()


@pytest.mark.parametrize("read_options", [(1, 1), (4, 16), (16, 500)])
def test_read_options_do_not_change_output(read_options):
    def build(g):
        return g.DataLoader(
            data_source=list(range(40)),
            sampler=g.samplers.IndexSampler(40, shuffle=True, num_epochs=1, seed=6),
            operations=[g.transforms.Batch(5)],
            read_options=g.ReadOptions(*read_options),
            worker_count=0,
        )

    run_both(build)


def test_data_loader_is_keyword_only():
    with pytest.raises(TypeError):
        spelt.DataLoader(list(range(3)), spelt.samplers.SequentialSampler(3))  # pylint: disable=too-many-function-args
    # itertools.islice works on the iterator (it is a plain Python iterator).
    it = iter(make_loader(spelt, 6, num_epochs=1))
    assert list(itertools.islice(it, 3)) == [0, 1, 2]


@pytest.mark.parametrize(
    "ops",
    [
        ("random_map", "random_map"),
        ("random_map", "map", "filter", "random_map", "batch3"),
        ("random_map", "random_map", "random_map", "batch2d"),
    ],
    ids=str,
)
@pytest.mark.parametrize("threads", [1, 8])
def test_several_random_maps_share_the_record_rng_like_grain(ops, threads):
    # Grain gives every RandomMap of a record the same metadata.rng: the second continues the
    # first's stream (it does not restart it).
    def build(g):
        loader = make_loader(g, 23, shuffle=True, num_epochs=2, seed=3, ops=ops, shard=(1, 2))
        return g.DataLoader(
            data_source=list(range(23)),
            sampler=loader._sampler,
            operations=loader._operations,
            read_options=g.ReadOptions(num_threads=threads),
            worker_count=0,
        )

    out = run_both(build)
    assert out


def test_two_random_maps_draw_different_numbers():
    class Draw(spelt.transforms.RandomMap):
        def random_map(self, x, rng):
            return x + [int(rng.integers(2**40))]

    out = list(
        spelt.DataLoader(
            data_source=[[]] * 6,
            sampler=spelt.samplers.IndexSampler(6, num_epochs=1, seed=1),
            operations=[Draw(), Draw()],
            worker_count=0,
        )
    )
    for g, (a, b) in enumerate(out):
        rng = np.random.Generator(np.random.Philox(key=1 + g))
        assert [a, b] == [int(rng.integers(2**40)), int(rng.integers(2**40))]


def test_loader_more_configurations_match_grain():
    run_both(
        lambda g: make_loader(g, 7, shuffle=True, seed=2, shard=(1, 3), ops=("batch2",)), limit=10
    )
    run_both(
        lambda g: make_loader(g, 7, shuffle=True, seed=2, shard=(1, 3, True), ops=("random_map",)),
        limit=10,
    )
    run_both(
        lambda g: make_loader(g, 13, shuffle=True, seed=2, num_epochs=1, ops=("batch3", "map"))
    )
    run_both(lambda g: make_loader(g, 13, num_epochs=1, ops=("batch3", "batch2")))
    # shard_options given to the DataLoader instead of the sampler.
    run_both(
        lambda g: g.DataLoader(
            data_source=list(range(10)),
            sampler=g.samplers.IndexSampler(10, shuffle=True, num_epochs=1, seed=2),
            shard_options=g.sharding.ShardOptions(1, 2),
            worker_count=0,
        )
    )
    run_both(
        lambda g: g.DataLoader(
            data_source=list(range(10)),
            sampler=g.samplers.SequentialSampler(10),
            shard_options=g.sharding.ShardOptions(1, 3, drop_remainder=True),
            worker_count=0,
        )
    )


def test_subclassed_samplers_match_grain():
    def build(g, sequential):
        base = g.samplers.SequentialSampler if sequential else g.samplers.IndexSampler

        class MySampler(base):
            pass

        sampler = (
            MySampler(9, seed=4)
            if sequential
            else MySampler(
                9, shuffle=True, seed=4, num_epochs=2, shard_options=g.sharding.ShardOptions(1, 2)
            )
        )
        return g.DataLoader(
            data_source=list(range(9)),
            sampler=sampler,
            operations=[pipelines.user_classes(g).Noise(), g.transforms.Batch(2)],
            worker_count=0,
        )

    run_both(lambda g: build(g, False))
    run_both(lambda g: build(g, True))


def test_huge_source_is_read_lazily():
    def build(g):
        return g.DataLoader(
            data_source=g.sources.RangeDataSource(0, 10**9, 1),
            sampler=g.samplers.IndexSampler(10**9, shuffle=True, seed=5),
            worker_count=0,
        )

    out = run_both(build, limit=6)
    assert all(0 <= x < 10**9 for x in out)


class PlusOne(spelt.transforms.Map):
    def map(self, x):
        return x + 1


class Jitter(spelt.transforms.RandomMap):
    def random_map(self, x, rng):
        return x + rng.random()


def test_loader_pickle_round_trip():
    import pickle  # pylint: disable=import-outside-toplevel

    loader = spelt.load(
        list(range(10)),
        num_epochs=1,
        shuffle=True,
        seed=1,
        batch_size=3,
        transformations=[PlusOne(), Jitter(), Jitter()],
    )
    expected = list(loader)
    assert_same(list(pickle.loads(pickle.dumps(loader))), expected)


def test_two_random_maps_after_batch_draw_different_numbers():
    class Draw(spelt.transforms.RandomMap):
        def random_map(self, x, rng):
            return list(x) + [int(rng.integers(2**40))]

    out = list(
        spelt.DataLoader(
            data_source=list(range(4)),
            sampler=spelt.samplers.IndexSampler(4, num_epochs=1, seed=1),
            operations=[spelt.transforms.Batch(2), Draw(), Draw()],
            worker_count=0,
        )
    )
    assert len(out) == 2
    for batch in out:
        assert batch[2] != batch[3]


# ---------------------------------------------------------------------------------------------
# Samplers written in Python (Grain's protocol), native sources, the record rng.


def _user_sampler(g, *, length, with_len, seed=None):
    """A sampler written against Grain's protocol: record g reads key (3 * g) % 17."""

    class UserSampler:
        def __getitem__(self, index):
            if not 0 <= index < length:
                raise IndexError(f"index {index} out of range")
            rng = None if seed is None else np.random.Generator(np.random.Philox(key=seed + index))
            return g.RecordMetadata(index=index, record_key=(3 * index) % 17, rng=rng)

        def __repr__(self):
            return f"UserSampler(length={length}, seed={seed})"

    if with_len:
        UserSampler.__len__ = lambda self: length
    return UserSampler()


@pytest.mark.parametrize("with_len", [True, False])
@pytest.mark.parametrize("length", [1, 13, 40])
@pytest.mark.parametrize("shard", [(0, 1), (1, 3), (2, 3, True)], ids=str)
def test_user_sampler_matches_grain(with_len, length, shard):
    # Without __len__ the epoch ends at the sampler's first IndexError (Grain binary-searches it).
    def build(g):
        u = pipelines.user_classes(g)
        return g.DataLoader(
            data_source=list(range(100, 117)),
            sampler=_user_sampler(g, length=length, with_len=with_len, seed=5),
            operations=[u.Noise(), u.Triple(), g.transforms.Batch(2)],
            shard_options=g.sharding.ShardOptions(*shard),
            worker_count=0,
        )

    out = run_both(build)
    assert sum(len(b) for b in out) == length // shard[1]


def test_user_sampler_calls_are_batched_and_errors_propagate():
    calls = []

    class Sampler:
        def __len__(self):
            return 6

        def __getitem__(self, index):
            calls.append(index)
            if index == 4:
                raise KeyError("broken sampler")
            return spelt.RecordMetadata(index=index, record_key=index)

    it = iter(
        spelt.DataLoader(
            data_source=list(range(6)),
            sampler=Sampler(),
            shard_options=spelt.sharding.NoSharding(),
            worker_count=0,
        )
    )
    assert [next(it) for _ in range(4)] == [0, 1, 2, 3]
    with pytest.raises(KeyError, match="broken sampler"):
        next(it)
    # No binary search (it has __len__), and each index asked once.
    assert calls[:5] == [0, 1, 2, 3, 4]


def test_subclass_overriding_getitem_is_called_like_grain():
    def build(g):
        class Reversed(g.samplers.IndexSampler):
            def __getitem__(self, index):
                m = super().__getitem__(index)
                return g.RecordMetadata(m.index, 9 - m.record_key, m.rng)

        return g.DataLoader(
            data_source=list(range(10)),
            sampler=Reversed(10, shuffle=True, num_epochs=1, seed=3),
            operations=[pipelines.user_classes(g).Noise()],
            worker_count=0,
        )

    run_both(build)


def test_empty_shard_fails_like_grain():
    def build(g):
        return g.DataLoader(
            data_source=list(range(2)),
            sampler=g.samplers.IndexSampler(2, g.sharding.ShardOptions(2, 3), num_epochs=2),
            worker_count=0,
        )

    for g in (grain, spelt):
        with pytest.raises(ZeroDivisionError):
            next(iter(build(g)))


def test_range_data_source_is_native_and_matches_grain():
    ours = spelt.sources.RangeDataSource(5, 40, 3)
    theirs = grain.sources.RangeDataSource(5, 40, 3)
    assert isinstance(ours._spelt_native_source(), spelt._core.NativeSource)
    assert repr(ours) == repr(theirs) == "RangeDataSource(start=5, stop=40, step=3)"
    assert len(ours) == len(theirs) == 12
    for i in [0, 1, 11, np.int64(7)]:
        assert ours[i] == theirs[i] and type(ours[i]) is type(theirs[i]) is int
    for i in [12, -1]:
        with pytest.raises(IndexError):
            theirs[i]
        with pytest.raises(IndexError):
            ours[i]
    for args in [(10, 0, -3), (0, 0, 1), (3, 1, 1), (-5, 5, 4)]:
        assert len(spelt.sources.RangeDataSource(*args)) == len(range(*args))
        assert list(spelt.sources.RangeDataSource(*args)) == list(range(*args))
    with pytest.raises(ValueError):
        spelt.sources.RangeDataSource(0, 5, 0)
    import pickle  # pylint: disable=import-outside-toplevel

    copy = pickle.loads(pickle.dumps(ours))
    assert repr(copy) == repr(ours) and copy[11] == 38


def test_range_data_source_loader_matches_grain_with_workers_and_shards():
    def build(g, workers=0):
        return g.DataLoader(
            data_source=g.sources.RangeDataSource(-50, 50, 2),
            sampler=g.samplers.IndexSampler(
                50, g.sharding.ShardOptions(1, 3), shuffle=True, num_epochs=2, seed=2**32 - 1
            ),
            operations=[g.transforms.Batch(4)],
            worker_count=workers,
        )

    out = run_both(build)
    assert_same(list(build(spelt, workers=2)), out)


def test_philox_generator_is_numpys_philox_with_that_key_and_counter():
    for key in [0, 1, 2**32 + 5, 2**64 - 1, 2**64 + 3, 2**128 - 1]:
        expected = np.random.Generator(np.random.Philox(key=key)).random(5)
        np.testing.assert_array_equal(_callables.philox_generator(key, 0).random(5), expected)
    # Grain's MapDataset.random_map: Philox(seed)'s key at counter [0, 0, 0, global index].
    words = np.random.Philox(42).state["state"]["key"].tolist()
    key = words[0] + (words[1] << 64)
    draws = list(
        grain.MapDataset.range(6).random_map(
            lambda x, rng: rng.integers(2**40, size=3).tolist(), seed=42
        )
    )
    assert [
        _callables.philox_generator(key, i).integers(2**40, size=3).tolist() for i in range(6)
    ] == draws
    counter = (1, 2, 3, 2**64 - 1)
    state = _callables.philox_generator(7, counter).bit_generator.state
    assert state["state"]["counter"].tolist() == list(counter)
    assert state["buffer_pos"] == 4 and state["has_uint32"] == 0


def test_grain_worker_state_restores_only_as_a_position():
    # Grain's workers batch their own round-robin records; its state after 3 batches of 4 with
    # 2 workers, {"0": 14, "1": 7}, marks 0, 2, ..., 14 and 1, 3, 5, 7 consumed: a set with
    # gaps that a global position cannot resume without repeating or skipping records.
    def restored(last_seen):
        it = iter(make_loader(spelt, 40, num_epochs=1, ops=("batch4",), worker_count=2))
        state = json.loads(it.get_state())
        state.update(last_seen_indices=last_seen, last_worker_index=1)
        it.set_state(json.dumps(state, indent=4).encode())
        return next(it).tolist()

    assert restored({"0": 14, "1": 15}) == [16, 17, 18, 19]  # 0..15 consumed
    assert restored({"0": 16, "1": 15}) == [17, 18, 19, 20]  # 0..16 consumed
    with pytest.raises(ValueError, match="gaps"):
        restored({"0": 14, "1": 7})
