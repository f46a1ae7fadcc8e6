"""MapDataset / IterDataset / DatasetIterator against Grain 0.2.18.

Each case builds the same pipeline with ``grain`` and with ``spelt`` and compares lengths,
random access (including indices past the first epoch) and iteration, exactly (types,
dtypes and shapes included, see pipelines.describe).
"""

import collections
import itertools
import sys

import grain
import numpy as np
import pytest

import pipelines
from pipelines import assert_same, both, timeout  # noqa: F401  (timeout: autouse fixture)
import spelt


def check_map(build, n_access=None):
    """Compares len, ds[i] for i < n_access (default 2 * len + 3) and iteration."""
    g_ds, s_ds = both(build)
    assert isinstance(s_ds, spelt.MapDataset)
    assert len(s_ds) == len(g_ds)
    n = n_access if n_access is not None else (2 * len(g_ds) + 3 if len(g_ds) else 0)
    assert_same([s_ds[i] for i in range(n)], [g_ds[i] for i in range(n)])
    if len(g_ds) < 10_000:
        assert_same(list(s_ds), list(g_ds))
    return g_ds, s_ds


def check_iter(build, limit=None):
    g_ds, s_ds = both(build)
    assert isinstance(s_ds, spelt.IterDataset)
    g_out = pipelines.take(iter(g_ds), limit)
    s_out = pipelines.take(iter(s_ds), limit)
    assert_same(s_out, g_out)
    return g_out, s_out


# ---------------------------------------------------------------------------------------------
# Goldens.


def test_golden_shuffle():
    ds = spelt.MapDataset.range(10).seed(42).shuffle()
    assert list(ds) == [1, 7, 6, 9, 0, 8, 4, 5, 3, 2]
    assert [ds[i] for i in range(10)] == [1, 7, 6, 9, 0, 8, 4, 5, 3, 2]
    assert list(grain.MapDataset.range(10).seed(42).shuffle()) == list(ds)


def test_golden_random_map():
    ds = spelt.MapDataset.range(10).seed(41).random_map(lambda x, rng: x + rng.integers(0, 10))
    assert [int(x) for x in ds] == [0, 6, 9, 5, 10, 14, 14, 13, 15, 13]
    check_map(
        lambda g: g.MapDataset.range(10).seed(41).random_map(lambda x, rng: x + rng.integers(0, 10))
    )


def test_golden_index_sampler_through_data_loader():
    def build(g):
        return g.DataLoader(
            data_source=list(range(5)),
            sampler=g.samplers.IndexSampler(num_records=5, shuffle=True, num_epochs=2, seed=32),
            worker_count=0,
        )

    g_out, s_out = both(lambda g: list(build(g)))
    assert s_out == [2, 4, 3, 0, 1, 0, 2, 4, 1, 3]
    assert_same(s_out, g_out)


def test_index_shuffle_65537_is_a_permutation():
    n = 65_537
    perm = [spelt.experimental.index_shuffle(i, n - 1, 7, 4) for i in range(n)]
    assert sorted(perm) == list(range(n))
    # A shuffled dataset of that size is a permutation in every epoch.
    ds = spelt.MapDataset.range(n).seed(3).shuffle()
    assert sorted(ds[i] for i in range(n)) == list(range(n))
    second_epoch = [ds[n + i] for i in range(n)]
    assert sorted(second_epoch) == list(range(n))
    assert second_epoch != [ds[i] for i in range(n)]


def test_index_shuffle_65537_differs_from_grain_on_purpose():
    # docs/compatibility.md: Grain's map is not a bijection for max_index == 2**16.
    n = 65_537
    grain_perm = [grain.experimental.index_shuffle(i, n - 1, 7, 4) for i in range(0, n)]
    assert len(set(grain_perm)) < n


@pytest.mark.parametrize(
    "max_index,seed,rounds",
    [
        (0, 0, 4),
        (1, 5, 4),
        (9, 42, 4),
        (1000, 2**32 - 1, 4),
        (70_000, 3, 8),
        (2**20 + 7, 1, 6),
        (2**40 - 3, 9, 4),
        (2**40 + 5, 9, 4),
    ],
)
def test_index_shuffle_matches_grain(max_index, seed, rounds):
    idx = sorted({0, max_index, max_index // 2, *range(min(max_index + 1, 300))})
    s = [spelt.experimental.index_shuffle(i, max_index, seed, rounds) for i in idx]
    g = [grain.experimental.index_shuffle(i, max_index, seed, rounds) for i in idx]
    assert s == g
    if max_index < 300:
        assert sorted(s) == list(range(max_index + 1))


def _error_of(call):
    try:
        call()
    except (TypeError, ValueError, OverflowError) as e:
        return type(e), str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize(
    "args",
    [
        (0, 8, 33, 2),  # rounds: checked first, with Grain's message
        (0, 8, 33, 5),
        (0, 8, 33, 0),
        (0, 8, 33, 1025),
        (0, 1, 0, 4294967294),
        (-1, 8, 33, 4),  # index
        (9, 8, 76, 4),
        (0, -1, 0, 4),
        (-1, 8, 33, 2),  # both bad: the rounds message
    ],
)
def test_index_shuffle_value_errors_match_grain(args):
    # Grain's binding (index_shuffle_module.cc): ValueError, same text.
    s = _error_of(lambda: spelt.experimental.index_shuffle(*args))
    g = _error_of(lambda: grain.experimental.index_shuffle(*args))
    assert s == g
    assert s[0] is ValueError


@pytest.mark.parametrize(
    "kwargs",
    [
        {"seed": -1},  # seed and rounds are uint32, index and max_index int64, as in Grain
        {"seed": 2**32},
        {"seed": 1.0},
        {"rounds": -2},
        {"rounds": 2**32 + 4},
        {"index": 2**63},
        {"max_index": 2**63},
        {"index": 0.5},
        {"index": None},
    ],
)
def test_index_shuffle_type_errors_match_grain(kwargs):
    args = {"index": 0, "max_index": 8, "seed": 3, "rounds": 4, **kwargs}
    assert _error_of(lambda: spelt.experimental.index_shuffle(**args))[0] is TypeError
    assert _error_of(lambda: grain.experimental.index_shuffle(**args))[0] is TypeError


# ---------------------------------------------------------------------------------------------
# Sources and range.


class ListSource:
    """A custom random-access source."""

    def __init__(self, items):
        self._items = items

    def __len__(self):
        return len(self._items)

    def __getitem__(self, i):
        return self._items[i]

    def __repr__(self):
        return f"ListSource(n={len(self._items)})"


SOURCES = {
    "list_int": lambda: list(range(7)),
    "list_mixed": lambda: [1, "two", 3.0, b"four", [5], (6,), {"k": 7}],
    "tuple": lambda: tuple(range(100, 105)),
    "ndarray_1d": lambda: np.arange(6, dtype=np.int16),
    "ndarray_2d": lambda: np.arange(12.0, dtype=np.float32).reshape(4, 3),
    "ndarray_str": lambda: np.array(["a", "bb", "ccc"]),
    "custom": lambda: ListSource([{"x": i, "y": [i, str(i)]} for i in range(5)]),
    "range_source": lambda: None,
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_source(name):
    def build(g):
        src = SOURCES[name]()
        if src is None:
            src = g.sources.RangeDataSource(3, 20, 4)
        return g.MapDataset.source(src)

    check_map(build)
    check_iter(lambda g: build(g).to_iter_dataset())


@pytest.mark.parametrize(
    "args", [(10,), (0,), (3, 11), (3, 20, 4), (20, 3, -4), (-5, 5, 3), (5, 5), (7, 2)]
)
def test_range(args):
    g_ds, s_ds = check_map(
        lambda g: g.MapDataset.range(*args), n_access=None if len(range(*args)) else 0
    )
    assert len(s_ds) == len(range(*args))
    assert list(s_ds) == list(range(*args))


def test_custom_map_dataset_subclass_as_source_of_ops():
    def build(g):
        return pipelines.user_classes(g).Squares(6)

    check_map(build, n_access=20)
    check_map(lambda g: build(g).seed(3).shuffle(), n_access=20)
    check_map(lambda g: build(g)[1:5].map(lambda x: x + 1), n_access=4)
    assert list(build(spelt)[1:5].repeat(2)) == list(build(spelt)[1:5]) * 2
    check_map(lambda g: build(g).random_map(lambda x, rng: x + rng.random(), seed=4))
    check_map(lambda g: build(g).filter(lambda x: x % 2 == 0).map_with_index(lambda i, x: (i, x)))
    check_map(lambda g: build(g).batch(4), n_access=5)
    check_iter(lambda g: build(g).to_iter_dataset().map(lambda x: -x).batch(4))
    # ds[slice] on a user subclass goes through the library's slice().
    assert isinstance(build(spelt)[2:], spelt.MapDataset)


def test_custom_iter_dataset_subclass_as_source_of_ops():
    def build(g):
        return pipelines.user_classes(g).Counts(11)

    g_out, s_out = check_iter(build)
    assert s_out == [7 * i for i in range(1, 12)]
    check_iter(lambda g: build(g).map(lambda x: x + 1).filter(lambda x: x % 3 != 0).batch(2))
    check_iter(lambda g: build(g).seed(5).random_map(lambda x, rng: x + int(rng.integers(100))))
    check_iter(lambda g: build(g).map_with_index(lambda i, x: (i, x)))
    check_iter(
        lambda g: g.experimental.FlatMapIterDataset(build(g), pipelines.user_classes(g).Split())
    )
    # The custom iterator's own state is nested inside the ops' states.
    it = iter(build(spelt).random_map(lambda x, rng: x, seed=1))
    next(it), next(it)
    assert it.get_state() == {"parent": {"pos": 2}, "index_for_rng": 2}


def test_user_subclass_passes_seeds_and_filters_of_its_parents_on():
    # Grain derives default seeds, and finds filters below a batch, through any dataset's
    # parents, user subclasses included.
    def plus(g):
        class Plus(g.MapDataset):
            def __init__(self, parent):
                super().__init__(parent)

            def __len__(self):
                return len(self._parent)

            def __getitem__(self, index):
                return self._parent[index] + 100

        return Plus

    def passing(g):
        class Passing(g.IterDataset):
            def __init__(self, parent):
                super().__init__(parent)

            def __iter__(self):
                return iter(self._parent)

        return Passing

    check_map(lambda g: plus(g)(g.MapDataset.range(6).seed(1)).shuffle())
    check_map(lambda g: plus(g)(g.MapDataset.range(6).seed(2)).random_map(draw))
    check_iter(
        lambda g: passing(g)(g.MapDataset.range(6).seed(3).to_iter_dataset()).random_map(draw)
    )
    for g in (grain, spelt):
        with pytest.raises(ValueError, match="can not follow"):
            plus(g)(g.MapDataset.range(6).filter(lambda x: x > 0)).batch(2)


def draw(x, rng):
    return x + int(rng.integers(1000))


def test_source_none_records_are_missing_like_grain():
    def build(g):
        return g.MapDataset.source([1, None, 3, None, 5])

    g_ds, s_ds = both(build)
    assert [s_ds[i] for i in range(5)] == [g_ds[i] for i in range(5)] == [1, None, 3, None, 5]
    assert list(g_ds.map(lambda x: x + 1)) == [2, 4, 6]
    assert list(s_ds.to_iter_dataset()) == list(g_ds.to_iter_dataset()) == [1, 3, 5]
    assert list(s_ds.map(lambda x: x + 1)) == [2, 4, 6]


def test_custom_map_dataset_returning_none_is_filtered_by_to_iter_dataset():
    class Holes(spelt.MapDataset):
        def __len__(self):
            return 10

        def __getitem__(self, index):
            return None if index % 3 == 0 else index

    ds = Holes()
    assert ds[3] is None and ds[4] == 4
    assert list(ds.to_iter_dataset()) == [1, 2, 4, 5, 7, 8]
    assert list(ds.to_iter_dataset(allow_nones=True)) == [None, 1, 2, None, 4, 5, None, 7, 8, None]
    assert list(ds.map(lambda x: x * 10)) == [10, 20, 40, 50, 70, 80]


# ---------------------------------------------------------------------------------------------
# MapDataset transformations.


@pytest.mark.parametrize("seed", [0, 1, 42, 2**32 - 1])
def test_shuffle_multi_epoch(seed):
    g_ds, s_ds = check_map(lambda g: g.MapDataset.range(13).shuffle(seed=seed), n_access=13 * 5)
    epochs = [[s_ds[e * 13 + i] for i in range(13)] for e in range(5)]
    for epoch, values in enumerate(epochs):
        assert sorted(values) == [v + 0 for v in range(13)], epoch
    assert len({tuple(e) for e in epochs}) > 1  # a new permutation each epoch


def test_shuffle_variants():
    check_map(lambda g: g.MapDataset.range(20).seed(5).shuffle().shuffle(), n_access=60)
    check_map(lambda g: g.MapDataset.range(20).seed(5).shuffle(seed=9).shuffle(), n_access=60)
    check_map(
        lambda g: g.MapDataset.source(np.arange(20.0)).seed(1).map(lambda x: x * 2).shuffle(),
        n_access=41,
    )
    check_map(lambda g: g.MapDataset.range(1).seed(2).shuffle(), n_access=3)
    a = list(spelt.MapDataset.range(50).shuffle(seed=1))
    b = list(spelt.MapDataset.range(50).shuffle(seed=2))
    assert a != b and sorted(a) == sorted(b) == list(range(50))


SLICES = [
    slice(None),
    slice(2, 8),
    slice(None, None, 2),
    slice(1, None, 3),
    slice(-3, None),
    slice(None, -2),
    slice(8, 2, -1),
    slice(None, None, -1),
    slice(None, None, -3),
    slice(-100, 3),
    slice(2, 100),
    slice(-1, -8, -2),
    slice(0, 1),
    slice(9, None),
    slice(3, 3),
    slice(5, 1),
    slice(100, 200),
    slice(None, None, 7),
]


@pytest.mark.parametrize("sl", SLICES, ids=str)
def test_slice(sl):
    def build(g):
        return g.MapDataset.range(10).seed(4).shuffle()[sl]

    g_ds, s_ds = both(build)
    assert len(s_ds) == len(g_ds) == len(range(10)[sl])
    if len(g_ds):
        check_map(build, n_access=len(g_ds))
        # Later epochs re-read the slice (a fixed subset; Grain reads later parent epochs).
        assert [s_ds[i] for i in range(3 * len(s_ds))] == list(s_ds) * 3
    assert_same(list(s_ds), list(g_ds))
    assert_same(list(spelt.MapDataset.range(10).slice(sl)), list(range(10)[sl]))


def test_slice_of_slice_and_epochs():
    check_map(lambda g: g.MapDataset.range(20)[2:18][1::3], n_access=30)
    check_map(lambda g: g.MapDataset.range(20)[::-1][3:][::2], n_access=30)
    check_map(lambda g: g.MapDataset.range(9)[2:7].seed(1).shuffle().repeat(3))
    # A slice is a fixed subset: each epoch re-reads it (unlike Grain, grain#1200).
    ds = spelt.MapDataset.range(9).seed(1).shuffle()[2:7]
    assert list(ds.repeat(3)) == list(ds) * 3
    check_map(lambda g: g.MapDataset.range(9).repeat(2)[3:15])


def test_slice_rejects_non_slice():
    with pytest.raises(ValueError):
        spelt.MapDataset.range(5).slice(3)


@pytest.mark.parametrize("reseed", [True, False])
@pytest.mark.parametrize("num_epochs", [1, 2, 3])
def test_repeat(num_epochs, reseed):
    g_ds, s_ds = check_map(
        lambda g: (
            g.MapDataset.range(6)
            .seed(7)
            .shuffle()
            .random_map(lambda x, rng: x * 100 + int(rng.integers(100)))
            .repeat(num_epochs, reseed_each_epoch=reseed)
        )
    )
    assert len(s_ds) == 6 * num_epochs
    out = list(s_ds)
    epochs = [out[i * 6 : (i + 1) * 6] for i in range(num_epochs)]
    if num_epochs > 1:
        assert (epochs[0] == epochs[1]) == (not reseed)


def test_repeat_forever():
    g_ds, s_ds = both(lambda g: g.MapDataset.range(4).seed(1).shuffle().repeat())
    assert len(s_ds) == len(g_ds) == sys.maxsize
    assert_same([s_ds[i] for i in range(20)], [g_ds[i] for i in range(20)])
    check_iter(
        lambda g: g.MapDataset.range(4).seed(1).shuffle().repeat().to_iter_dataset(), limit=21
    )


def test_map_random_map_map_with_index():
    check_map(lambda g: g.MapDataset.range(8).map(lambda x: {"x": x, "sq": x * x}))
    check_map(lambda g: g.MapDataset.range(8).map(pipelines.user_classes(g).Triple()))
    check_map(
        lambda g: g.MapDataset.range(8).random_map(
            lambda x, rng: (x, float(rng.random()), rng.integers(0, 5, size=3)), seed=3
        )
    )
    check_map(
        lambda g: g.MapDataset.range(8).random_map(
            pipelines.user_classes(g).Noise(), seed=2**32 - 1
        )
    )
    check_map(lambda g: g.MapDataset.range(8).map_with_index(lambda i, x: (i, x * 2)))
    check_map(lambda g: g.MapDataset.range(8).map_with_index(pipelines.user_classes(g).Tag()))


def test_random_map_rng_depends_on_global_index():
    ds = spelt.MapDataset.range(5).random_map(lambda x, rng: int(rng.integers(2**30)), seed=1)
    first, second = [ds[i] for i in range(5)], [ds[i] for i in range(5, 10)]
    assert first != second
    assert [ds[i] for i in range(5)] == first  # deterministic on re-read


def test_filter_gives_none_at_dropped_indices():
    g_ds, s_ds = check_map(lambda g: g.MapDataset.range(10).filter(lambda x: x % 3 == 0))
    assert [s_ds[i] for i in range(10)] == [0, None, None, 3, None, None, 6, None, None, 9]
    assert list(s_ds) == [0, 3, 6, 9]
    check_map(
        lambda g: (
            g.MapDataset.range(10)
            .filter(pipelines.user_classes(g).Even())
            .map(lambda x: x + 1)
            .random_map(lambda x, rng: x + rng.random(), seed=1)
            .map_with_index(lambda i, x: (i, x))
        )
    )


@pytest.mark.parametrize(
    "size,drop",
    [
        (1, False),
        (3, False),
        (3, True),
        (4, True),
        (10, False),
        (10, True),
        (11, False),
        (11, True),
    ],
)
def test_map_batch(size, drop):
    g_ds, s_ds = check_map(
        lambda g: g.MapDataset.range(10).batch(size, drop_remainder=drop),
        n_access=None if size <= 10 or not drop else 0,
    )
    expected_len = 10 // size if drop else -(-10 // size)
    assert len(s_ds) == expected_len
    check_map(
        lambda g: (
            g.MapDataset.range(10).seed(1).shuffle().batch(size, drop_remainder=drop).repeat(2)
        )
    )


def test_map_batches_do_not_span_epochs():
    ds = spelt.MapDataset.range(5).batch(2)
    assert len(ds) == 3
    got = [ds[i].tolist() for i in range(6)]
    assert got == [[0, 1], [2, 3], [4], [0, 1], [2, 3], [4]]
    ds = spelt.MapDataset.range(5).repeat(2).batch(2)
    assert [b.tolist() for b in ds] == [[0, 1], [2, 3], [4, 0], [1, 2], [3, 4]]
    check_map(lambda g: g.MapDataset.range(5).seed(3).shuffle().batch(2), n_access=9)


def test_seed_derivation_chains():
    def noise(x, rng):
        return x * 1000 + int(rng.integers(1000))

    check_map(
        lambda g: (
            g.MapDataset.range(10)
            .seed(5)
            .shuffle()
            .seed(7)
            .random_map(noise)
            .map(lambda x: x + 1)
            .random_map(lambda x, rng: x + rng.random())
        )
    )
    check_map(
        lambda g: (
            g.MapDataset.range(10).seed(5).map(lambda x: x).shuffle().shuffle().random_map(noise)
        )
    )
    check_map(lambda g: g.MapDataset.range(10).seed(5).seed(6).shuffle())
    check_map(
        lambda g: (
            g.MapDataset.range(10)
            .seed(1)[2:9]
            .repeat(2)
            .shuffle()
            .random_map(noise)
            .filter(lambda x: x % 2 == 0)
            .seed(3)
            .random_map(noise)
        )
    )
    check_iter(
        lambda g: (
            g.MapDataset.range(10)
            .seed(5)
            .shuffle()
            .to_iter_dataset()
            .random_map(noise)
            .seed(8)
            .map(lambda x: x + 1)
            .random_map(noise)
        )
    )
    # WithOptionsIterDataset is one level between a seed and what derives from it, as in Grain.
    check_iter(
        lambda g: g.experimental.WithOptionsIterDataset(
            g.MapDataset.range(10).seed(7).to_iter_dataset(), g.experimental.DatasetOptions()
        ).random_map(noise)
    )
    # Inserting a node between seed() and shuffle() changes the order, in both.
    a = list(spelt.MapDataset.range(10).seed(42).shuffle())
    b = list(spelt.MapDataset.range(10).seed(42).map(lambda x: x).shuffle())
    assert a != b


# ---------------------------------------------------------------------------------------------
# IterDataset transformations.


@pytest.mark.parametrize("read_options", [None, (0, 0), (1, 1), (4, 0), (4, 8), (16, 500)])
def test_to_iter_dataset(read_options):
    def build(g):
        ro = None if read_options is None else g.ReadOptions(*read_options)
        return (
            g.MapDataset.range(40)
            .seed(2)
            .shuffle()
            .filter(lambda x: x % 4 != 0)
            .to_iter_dataset(ro)
        )

    check_iter(build)
    check_iter(
        lambda g: (
            g.MapDataset.range(40)
            .seed(2)
            .shuffle()
            .batch(3)
            .to_iter_dataset(None if read_options is None else g.ReadOptions(*read_options))
        )
    )


def test_iter_dataset_ops():
    base = lambda g: g.MapDataset.range(20).to_iter_dataset()  # noqa: E731
    check_iter(lambda g: base(g).map(lambda x: x + 1))
    check_iter(lambda g: base(g).map(pipelines.user_classes(g).Triple()))
    check_iter(lambda g: base(g).filter(lambda x: x % 3 == 0))
    check_iter(lambda g: base(g).filter(pipelines.user_classes(g).Even()))
    check_iter(lambda g: base(g).map_with_index(lambda i, x: (i, x)))
    check_iter(lambda g: base(g).map_with_index(pipelines.user_classes(g).Tag()))
    check_iter(lambda g: base(g).random_map(lambda x, rng: x + rng.integers(0, 100), seed=3))
    check_iter(lambda g: base(g).seed(9).random_map(pipelines.user_classes(g).Noise()))
    check_iter(
        lambda g: (
            base(g)
            .filter(lambda x: x % 3 != 0)
            .map(lambda x: x * 2)
            .map_with_index(lambda i, x: (i, x))
            .batch(3)
        )
    )


@pytest.mark.parametrize(
    "size,drop", [(1, False), (3, False), (3, True), (7, True), (25, False), (25, True)]
)
def test_iter_batch(size, drop):
    g_out, s_out = check_iter(
        lambda g: g.MapDataset.range(21).to_iter_dataset().batch(size, drop_remainder=drop)
    )
    assert len(s_out) == (21 // size if drop else -(-21 // size))


def test_iter_random_map_counts_elements_not_indices():
    # IterDataset.random_map keys the rng by the element count, after the filter.
    check_iter(
        lambda g: (
            g.MapDataset.range(30)
            .filter(lambda x: x % 2 == 0)
            .to_iter_dataset()
            .random_map(lambda x, rng: (x, int(rng.integers(10**6))), seed=1)
        )
    )


def test_flat_map_iter_dataset():
    g_out, s_out = check_iter(
        lambda g: g.experimental.FlatMapIterDataset(
            g.MapDataset.range(10).to_iter_dataset(), pipelines.user_classes(g).Split()
        )
    )
    assert s_out == [10, 20, 21, 30, 31, 32, 50, 60, 61, 70, 71, 72, 90]
    check_iter(
        lambda g: g.experimental.FlatMapIterDataset(
            g.MapDataset.range(10).seed(1).shuffle().to_iter_dataset(),
            pipelines.user_classes(g).Split(),
        ).batch(4)
    )
    assert spelt.experimental.FlatMapTransform is spelt.transforms.FlatMap


def test_flat_map_iter_dataset_str_matches_grain():
    def build(g):
        parent = g.MapDataset.range(4).to_iter_dataset()
        return [
            g.experimental.FlatMapIterDataset(parent, pipelines.user_classes(g).Split()),
            parent.apply([pipelines.user_classes(g).Split()]),  # the same dataset, by apply
        ]

    g_ds, s_ds = both(build)
    assert [str(d) for d in s_ds] == [str(d) for d in g_ds]
    assert str(s_ds[0]) == "FlatMapIterDataset(transform=Split)"


def test_apply_with_transform_objects():
    def build(g):
        u = pipelines.user_classes(g)
        return g.MapDataset.range(20).seed(6).apply([u.Triple(), u.Noise(), u.Even(), u.Tag()])

    check_map(build)
    check_map(lambda g: g.MapDataset.range(9).apply(pipelines.user_classes(g).Triple()))
    check_map(lambda g: g.MapDataset.range(9).apply([g.transforms.Batch(2, drop_remainder=True)]))

    def build_iter(g):
        u = pipelines.user_classes(g)
        return (
            g.MapDataset.range(20)
            .seed(6)
            .apply([u.Triple(), u.Noise(), u.Even()])
            .to_iter_dataset()
            .apply([u.Triple(), u.Split(), u.Tag(), g.transforms.Batch(3)])
        )

    check_iter(build_iter)
    check_iter(
        lambda g: (
            g.MapDataset.range(9)
            .to_iter_dataset()
            .apply(g.transforms.Batch(2, batch_fn=lambda xs: sum(xs)))
        )
    )


def test_pipe_and_iter_shortcut():
    def add(ds, k, *, times):
        return ds.map(lambda x: (x + k) * times)

    check_map(lambda g: g.MapDataset.range(5).pipe(add, 3, times=2))
    check_iter(lambda g: g.MapDataset.range(5).to_iter_dataset().pipe(add, 1, times=3))
    it = iter(spelt.MapDataset.range(4))
    assert isinstance(it, spelt.DatasetIterator)
    assert list(it) == [0, 1, 2, 3]
    assert it.get_state() == {"next_index": 4}


def test_iterator_close():
    it = iter(spelt.MapDataset.range(5).to_iter_dataset())
    assert next(it) == 0
    it.close()
    it.close()  # idempotent
    with pytest.raises(ValueError):
        next(it)


# ---------------------------------------------------------------------------------------------
# Batching structure (default batch function, same as Grain's np.stack-based make_batch).

Point = collections.namedtuple("Point", ["x", "y"])

BATCH_ELEMENTS = {
    "ints": [1, 2, 3],
    "negative_and_big_ints": [-(2**40), 2**41, 0],
    "floats": [1.5, 2.0, -3.25],
    "bools": [True, False, True],
    "mixed_int_float": [1, 2.5, 3],
    "np_float32": [np.float32(1.5), np.float32(2), np.float32(3)],
    "np_int8": [np.int8(1), np.int8(-2), np.int8(3)],
    "np_uint64": [np.uint64(2**63), np.uint64(1), np.uint64(0)],
    "np_bool": [np.bool_(True), np.bool_(False), np.bool_(True)],
    "arrays_uint16": [np.ones((2, 3), np.uint16) * i for i in range(3)],
    "arrays_0d": [np.array(i, dtype=np.float16) for i in range(3)],
    "arrays_empty": [np.zeros((0, 2), np.int32) for _ in range(3)],
    "strings": ["a", "bcd", "ef"],
    "bytes": [b"a", b"bcd", b"\x00f"],
    "dict": [{"x": i, "y": float(i), "z": np.arange(3) + i} for i in range(3)],
    "dict_key_order": [{"b": i, "a": str(i)} for i in range(3)],
    "list": [[i, i * 2] for i in range(3)],
    "tuple": [(i, str(i)) for i in range(3)],
    "namedtuple": [Point(i, np.float32(i)) for i in range(3)],
    "nested": [{"a": [(i, {"b": np.zeros(2) + i})], "c": Point(x=i, y=[i, "s"])} for i in range(3)],
    "empty_containers": [{"a": [], "b": (), "c": {}, "d": i} for i in range(3)],
    "defaultdict": [collections.defaultdict(list, a=i, b=[i]) for i in range(3)],
    # Leaves the engine cannot represent beside native ones: np.stack decides.
    "int_beyond_int64_and_int": [2**63, 1, 2],
    "int_beyond_uint64_and_int": [2**70, 1, 2],
    "mixed_byte_order": [np.array([1], ">i4"), np.array([2], "<i4"), np.array([3], "<i4")],
}


@pytest.mark.parametrize("name", list(BATCH_ELEMENTS))
@pytest.mark.parametrize("where", ["map", "iter"])
def test_batch_structure(name, where):
    elements = BATCH_ELEMENTS[name]

    def build(g):
        ds = g.MapDataset.source(elements)
        if where == "iter":
            ds = ds.to_iter_dataset()
        return ds.batch(2)

    g_ds, s_ds = both(build)
    g_out, s_out = list(g_ds), list(s_ds)
    assert len(s_out) == 2  # full batch and a single-element batch
    assert_same(s_out, g_out)


# Leaves with dtypes Spelt has no native type for: batched through np.stack, as Grain does.
NUMPY_LEAVES_NOT_BATCHED = {
    "np_str_scalars": [np.str_("x"), np.str_("yy"), np.str_("z")],
    "np_bytes_scalars": [np.bytes_(b"x"), np.bytes_(b"yy"), np.bytes_(b"z")],
    "str_ndarray_source": np.array(["a", "bb", "c"]),
    "str_arrays": [np.array(["a", "bb"])] * 3,
    "bytes_arrays": [np.array([b"a", b"bb"])] * 3,
    "complex_arrays": [np.array([1 + 2j, 3j])] * 3,
    "datetime_arrays": [np.array(["2020-01-01"], dtype="datetime64[D]")] * 3,
    "object_arrays": [np.array([1, "a"], dtype=object)] * 3,
}


@pytest.mark.parametrize("name", list(NUMPY_LEAVES_NOT_BATCHED))
def test_batch_numpy_leaves_of_other_dtypes(name):
    elements = NUMPY_LEAVES_NOT_BATCHED[name]
    g_ds, s_ds = both(lambda g: g.MapDataset.source(elements).batch(2))
    assert_same(list(s_ds), list(g_ds))


def test_batch_structure_details():
    b = spelt.MapDataset.source([{"i": 1, "f": 2.0, "s": "ab", "p": Point(np.int8(1), [3])}] * 3)
    batch = b.batch(3)[0]
    assert type(batch) is dict and set(batch) == {"i", "f", "s", "p"}
    assert batch["i"].dtype == np.int64 and batch["i"].shape == (3,)
    assert batch["f"].dtype == np.float64
    assert batch["s"].dtype.kind == "U" and batch["s"].tolist() == ["ab"] * 3
    assert type(batch["p"]) is Point
    assert batch["p"].x.dtype == np.int8
    assert type(batch["p"].y) is list and batch["p"].y[0].tolist() == [3, 3, 3]


class Pair(tuple):
    """A tuple subclass that is not a namedtuple (built from an iterable)."""


def test_batch_container_subclasses_keep_their_type():
    # Grain's tree_lib (without jax) rebuilds containers by type: a defaultdict with its
    # default_factory, a tuple subclass from an iterable, a namedtuple from its fields.
    for ds in (spelt.MapDataset, spelt.MapDataset.to_iter_dataset):
        source = spelt.MapDataset.source(
            [{"d": collections.defaultdict(list, a=i), "p": Pair((i, -i))} for i in range(2)]
        )
        batch = next(iter(source.batch(2) if ds is spelt.MapDataset else ds(source).batch(2)))
        assert type(batch["d"]) is collections.defaultdict
        assert batch["d"].default_factory is list and batch["d"]["a"].tolist() == [0, 1]
        assert batch["d"]["missing"] == []
        assert type(batch["p"]) is Pair and [a.tolist() for a in batch["p"]] == [[0, 1], [0, -1]]


def test_batch_of_batches_stacks_again():
    check_iter(lambda g: g.MapDataset.range(12).batch(3).to_iter_dataset().batch(2))


def test_batch_fn():
    def concat(xs):
        return {"sum": sum(x["a"] for x in xs), "n": len(xs)}

    check_map(lambda g: g.MapDataset.source([{"a": i} for i in range(7)]).batch(3, batch_fn=concat))
    check_iter(
        lambda g: (
            g.MapDataset.source([{"a": i} for i in range(7)])
            .to_iter_dataset()
            .batch(3, drop_remainder=True, batch_fn=concat)
        )
    )
    check_iter(lambda g: g.MapDataset.range(7).to_iter_dataset().batch(3, batch_fn=list))
    # batch_fn receives a sequence of exactly the batch's elements.
    seen = []
    list(
        spelt.MapDataset.range(5)
        .to_iter_dataset()
        .batch(2, batch_fn=lambda xs: seen.append(list(xs)))
    )
    assert seen == [[0, 1], [2, 3], [4]]


class _Opaque:
    """A leaf numpy cannot convert to a numeric array: np.stack makes an object array."""

    def __init__(self, value):
        self.value = value


def test_batch_of_python_object_leaves():
    def build(g):
        return g.MapDataset.source([{"o": _Opaque(i), "i": i} for i in range(3)]).batch(3)

    g_ds, s_ds = both(build)
    s_batch, g_batch = s_ds[0], g_ds[0]
    assert s_batch["o"].dtype == object and s_batch["o"].shape == (3,)
    assert [o.value for o in s_batch["o"]] == [o.value for o in g_batch["o"]] == [0, 1, 2]
    assert_same(s_batch["i"], g_batch["i"])


# ---------------------------------------------------------------------------------------------
# Argument types, large indices, pickling, threads.


def test_numpy_integer_arguments():
    i64 = np.int64
    g_ds, s_ds = both(lambda g: g.MapDataset.range(i64(2), i64(19), i64(3)))
    assert len(s_ds) == len(g_ds) == 6
    np.testing.assert_equal(list(s_ds), list(g_ds))  # Grain keeps numpy ints here
    check_map(lambda g: g.MapDataset.range(10)[i64(2) : i64(9) : i64(2)])
    check_map(lambda g: g.MapDataset.range(5).batch(i64(2)).repeat(i64(2)))
    check_iter(lambda g: g.MapDataset.range(5).to_iter_dataset().batch(i64(2)))
    g_ds, s_ds = both(lambda g: g.MapDataset.range(10).seed(1).shuffle())
    assert s_ds[i64(3)] == g_ds[i64(3)] and s_ds[i64(12)] == g_ds[i64(12)]
    assert s_ds[np.uint8(12)] == s_ds[np.int32(12)] == s_ds[12]  # (Grain overflows on these)


@pytest.mark.parametrize(
    "seed",
    [np.int64(3), np.uint32(2**32 - 1), np.int8(7)],
    ids=lambda s: f"{type(s).__name__}({s})",
)
def test_numpy_integer_seeds(seed):
    # Grain accepts any integer seed (for example one drawn with numpy).
    check_map(lambda g: g.MapDataset.range(9).seed(seed).shuffle())
    check_map(lambda g: g.MapDataset.range(9).shuffle(seed=seed))
    check_map(
        lambda g: g.MapDataset.range(9).random_map(
            lambda x, rng: int(rng.integers(1000)), seed=seed
        )
    )
    check_iter(
        lambda g: (
            g.MapDataset.range(9)
            .to_iter_dataset()
            .seed(seed)
            .random_map(lambda x, rng: int(rng.integers(1000)))
        )
    )


def test_large_indices():
    n = 10**12
    idx = [0, 1, n - 1, n, 5 * n + 7, 2**62]
    g_ds, s_ds = both(lambda g: g.MapDataset.range(n).seed(1).shuffle())
    assert [s_ds[i] for i in idx] == [g_ds[i] for i in idx]
    assert all(0 <= s_ds[i] < n for i in idx)
    g_ds, s_ds = both(
        lambda g: g.MapDataset.range(10).random_map(lambda x, rng: int(rng.integers(10**6)), seed=1)
    )
    idx = [2**32 - 1, 2**32, 2**40 + 3, 2**62]
    assert [s_ds[i] for i in idx] == [g_ds[i] for i in idx]


def test_datasets_pickle_round_trip():
    import cloudpickle  # pylint: disable=import-outside-toplevel

    ds = (
        spelt.MapDataset.range(30)
        .seed(3)
        .shuffle()
        .map(np.sqrt)
        .filter(np.isfinite)
        .random_map(lambda x, rng: x + rng.random())
        .to_iter_dataset()
        .batch(4)
    )
    expected = list(ds)
    copy = cloudpickle.loads(cloudpickle.dumps(ds))
    assert_same(list(copy), expected)
    assert_same(list(cloudpickle.loads(cloudpickle.dumps(copy))), expected)


def test_map_dataset_is_thread_safe():
    from concurrent.futures import ThreadPoolExecutor  # pylint: disable=import-outside-toplevel

    ds = (
        spelt.MapDataset.range(200)
        .seed(1)
        .shuffle()
        .random_map(lambda x, rng: (x, float(rng.random())))
    )
    serial = [ds[i] for i in range(600)]
    with ThreadPoolExecutor(8) as pool:
        parallel = list(pool.map(ds.__getitem__, range(600)))
    assert parallel == serial
    threaded = ds.to_iter_dataset(spelt.ReadOptions(num_threads=8, prefetch_buffer_size=32))
    assert list(threaded) == serial[:200]


@pytest.mark.parametrize("next_index", [11, -1, 2**64 - 1, 2**70])
@pytest.mark.parametrize("top", ["plain", "map", "batch", "map_batch"])
def test_set_state_out_of_range_raises_index_error_like_grain(next_index, top):
    def build(g):
        ds = g.MapDataset.range(10)
        if "map" in top:
            ds = ds.map(lambda x: x + 1)
        ds = ds.to_iter_dataset()
        return ds.batch(2) if "batch" in top else ds

    for g in (grain, spelt):
        it = iter(build(g))
        # Beyond 64 bits Spelt names the exact value, not the length (it fits no dataset).
        message = (
            f"{next_index} is out of range"
            if next_index >= 2**64 and g is spelt
            else "out of range for dataset of length 10"
        )
        with pytest.raises(IndexError, match=message):
            it.set_state({"next_index": next_index})


def test_ints_beyond_int64_saturate_like_python():
    # Grain passes Python ints through: slices clamp, counts and batch sizes beyond any length
    # take everything.
    check_map(lambda g: g.MapDataset.range(10)[2 : 2**64])
    check_map(lambda g: g.MapDataset.range(10)[-(2**70) : 3])
    check_map(lambda g: g.MapDataset.range(10)[:: 2**64])
    check_map(lambda g: g.MapDataset.range(5).batch(2**63))
    check_iter(lambda g: g.MapDataset.range(5).to_iter_dataset().batch(2**63))
    check_iter(
        lambda g: g.experimental.LimitIterDataset(g.MapDataset.range(5).to_iter_dataset(), 2**63)
    )


NEGATIVE_INDEX_PIPELINES = {
    "range": lambda g: g.MapDataset.range(10),
    "shuffle": lambda g: g.MapDataset.range(10).seed(3).shuffle(),
    "shuffle_seed_0": lambda g: g.MapDataset.range(10).shuffle(seed=0),  # epoch -1: 2**32 - 1
    "source_shuffle_map": lambda g: (
        g.MapDataset.source(list(range(10))).seed(5).shuffle().map(lambda x: x * 2)
    ),
    "shuffle_filter": lambda g: g.MapDataset.range(10).seed(1).shuffle().filter(_even),
    "shuffle_batch": lambda g: g.MapDataset.range(10).seed(4).shuffle().batch(3),
    "shuffle_repeat": lambda g: g.MapDataset.range(10).seed(2).shuffle().repeat(2),
    "repeat_shuffle": lambda g: g.MapDataset.range(10).repeat(2).seed(2).shuffle(),
    "concatenate": lambda g: g.MapDataset.concatenate(
        [g.MapDataset.range(4).seed(1).shuffle(), g.MapDataset.range(10, 16)]
    ),
}


def _even(x):
    return x % 2 == 0


@pytest.mark.parametrize("name", NEGATIVE_INDEX_PIPELINES)
def test_negative_index_reads_an_earlier_epoch_as_grain(name):
    # Grain's ds[i] for i < 0 is a global index: position i % len of epoch i // len, so after
    # a shuffle ds[-1] is the last element of the permutation of seed - 1 (mod 2**32).
    g_ds, s_ds = both(NEGATIVE_INDEX_PIPELINES[name])
    n = len(s_ds)
    indices = [-1, -2, -n, -n - 1, -2 * n - 3, -7 * n]
    assert_same([s_ds[i] for i in indices], [g_ds[i] for i in indices])
    assert_same(s_ds._getitems(indices), g_ds._getitems(indices))


def test_negative_index_of_a_shuffle_is_not_the_first_epochs():
    ds = spelt.MapDataset.range(10).seed(3).shuffle()
    assert [ds[i] for i in range(-10, 0)] != [ds[i] for i in range(10)]
    assert sorted(ds[i] for i in range(-10, 0)) == list(range(10))  # a whole epoch
    assert ds[-1] == ds[(2**32 - 1) * 10 + 9]  # epoch -1 is epoch 2**32 - 1 for the seeds
    for empty_or_infinite in (spelt.MapDataset.range(0), ds.repeat()):
        with pytest.raises(IndexError):
            empty_or_infinite[-1]  # pylint: disable=pointless-statement


@pytest.mark.parametrize("num_epochs", [2 * 10**18, 2**63, 2**70])
def test_repeat_beyond_maxsize_saturates(num_epochs):
    # Grain's len() (and iteration) raises OverflowError here; Spelt's length saturates at
    # sys.maxsize, the length of an infinite repeat, and the dataset stays usable.
    with pytest.raises(OverflowError):
        len(grain.MapDataset.range(5).repeat(num_epochs))
    ds = spelt.MapDataset.range(5).repeat(num_epochs)
    assert len(ds) == sys.maxsize
    assert ds[7] == 2 and ds[10**18 + 3] == 3
    assert list(itertools.islice(ds, 7)) == [0, 1, 2, 3, 4, 0, 1]


@pytest.mark.parametrize(
    "args",
    [(0, 10, 2**70), (3, 2**64, 2**64), (5, -(2**70), -3), (-(2**62), 2**62), (2**64, 2**64 + 2)],
)
def test_range_beyond_int64(args):
    # Python's range: elements and steps beyond int64 work where the elements fit in int64;
    # more than sys.maxsize elements is OverflowError as in Grain; elements beyond int64 are
    # an OverflowError in Spelt (Grain yields them).
    try:
        expected = list(grain.MapDataset.range(*args))
    except OverflowError:
        expected = OverflowError
    if expected is OverflowError or max(map(abs, expected)) > sys.maxsize:
        with pytest.raises(OverflowError):
            list(spelt.MapDataset.range(*args))
        return
    ds = spelt.MapDataset.range(*args)
    assert list(ds) == expected and str(ds) == str(grain.MapDataset.range(*args))


def test_numpy_ints_in_states_and_counts():
    # Grain takes numpy integers wherever it takes ints (states from numpy or Orbax trees).
    def build(g):
        ds = g.MapDataset.range(8).to_iter_dataset().random_map(lambda x, r: x, seed=1)
        it = iter(g.experimental.LimitIterDataset(ds, count=np.int64(5)))
        next(it)
        state = it.get_state()
        state["parent"] = {
            "parent": {"next_index": np.int64(2)},
            "index_for_rng": np.int32(2),
        }
        it.set_state(state)
        window = g.experimental.WindowShuffleMapDataset(
            g.MapDataset.range(8), window_size=np.int64(4), seed=np.int64(1)
        )
        repeated = g.experimental.RepeatIterDataset(
            g.MapDataset.range(2).to_iter_dataset(), num_epochs=2**70
        )
        return list(it), [int(x) for x in window], list(itertools.islice(repeated, 5))

    g_out, s_out = both(build)
    assert s_out == g_out


def test_pipe_func_is_positional_only():
    # Grain's pipe(func, /, *args, **kwargs): `func` may also be a keyword of the function.
    check_map(lambda g: g.MapDataset.range(3).pipe(lambda d, func: d.map(func), func=abs))


def test_source_str_names_the_source_type():
    # Grain's str() names the source's type, never its contents (a list of a million items).
    for source in (list(range(10**5)), np.arange(4)):
        g_str, s_str = both(lambda g: str(g.MapDataset.source(source)))
        assert s_str == g_str.replace("grain", "spelt") and len(s_str) < 60


def _keep(x):
    return x


STR_PIPELINES = [
    lambda g: g.MapDataset.range(5).map(_keep),
    lambda g: g.MapDataset.range(5).random_map(lambda x, rng: x, seed=1),
    lambda g: g.MapDataset.range(5).map_with_index(lambda i, x: x),
    lambda g: g.MapDataset.range(5).filter(_keep),
    lambda g: g.MapDataset.range(5)[1:3],
    lambda g: g.MapDataset.range(5)[-2::2],
    lambda g: g.MapDataset.range(5).batch(2, drop_remainder=True),
    lambda g: g.MapDataset.range(5).repeat(2),
    lambda g: g.MapDataset.range(5).to_iter_dataset(g.ReadOptions(num_threads=2)),
    lambda g: g.MapDataset.range(5).to_iter_dataset().map(_keep).filter(_keep).batch(2),
    # to_iter_dataset(): a range without read_options reads with prefetch_buffer_size=0 (Grain's
    # RangeMapDataset.to_iter_dataset); any other dataset, or given options, as given.
    lambda g: g.MapDataset.range(5).to_iter_dataset(),
    lambda g: g.MapDataset.range(5).to_iter_dataset(allow_nones=True),
    lambda g: g.MapDataset.range(5).to_iter_dataset(g.ReadOptions()),
    lambda g: g.MapDataset.range(5).seed(1).to_iter_dataset(),
    lambda g: g.MapDataset.range(5).map(_keep).to_iter_dataset(),
    lambda g: g.MapDataset.source([1, 2]).to_iter_dataset(),
]


@pytest.mark.parametrize("build", STR_PIPELINES)
def test_str_as_grain(build):
    # Grain's str() of each transformation (its execution summaries and messages show them).
    g_str, s_str = both(lambda g: str(build(g)))
    assert s_str == g_str
