"""grain.experimental's stream combinators and helpers against Grain 0.2.18: LimitIterDataset,
RepeatIterDataset, ZipMapDataset, ZipIterDataset, IterDataset.mix, select_from_datasets,
generic classes, apply_transformations, get_element_spec, get/set_next_index, RngPool,
DatasetOptions. The named pipelines in pipelines.py (limit, repeat_iter, zip_*, mix_iter*)
are also restored from every position in a new process by test_checkpoint.py."""

from __future__ import annotations

import pickle
import re

import grain
import numpy as np
import pytest

import pipelines
import spelt
from pipelines import assert_same, both, timeout  # noqa: F401


def _same_run(build, limit=None):
    """Equal outputs and equal states after every element; restore from every position."""
    g_ds, s_ds = both(build)
    g_out, g_states = pipelines.run_with_states(iter(g_ds), limit)
    s_out, s_states = pipelines.run_with_states(iter(s_ds), limit)
    assert_same(s_out, g_out)
    assert s_states == g_states
    if limit is None:
        spelt.experimental.assert_equal_output_after_checkpoint(s_ds)
    for k, state in enumerate(s_states):  # a Spelt state restores in Grain too, and back
        expected = s_out[k : k + 3]
        if limit is not None and len(expected) < 3:
            break  # the stream goes on past what was read
        it = iter(s_ds)
        it.set_state(g_states[k])
        assert_same(pipelines.take(it, len(expected) or 3), expected)
        it = iter(g_ds)
        it.set_state(state)
        assert_same(pipelines.take(it, len(expected) or 3), expected)
    return s_ds


@pytest.mark.parametrize("count", [1, 4, 30])
def test_limit(count):
    s_ds = _same_run(
        lambda g: g.experimental.LimitIterDataset(
            g.MapDataset.range(12).seed(2).shuffle().to_iter_dataset().batch(2), count
        )
    )
    assert str(s_ds) == f"LimitIterDataset(count={count})"
    with pytest.raises(ValueError, match="Count must be"):
        spelt.experimental.LimitIterDataset(spelt.MapDataset.range(3).to_iter_dataset(), 0)


@pytest.mark.parametrize("num_epochs", [1, 2, 3])
def test_repeat_iter(num_epochs):
    _same_run(
        lambda g: g.experimental.RepeatIterDataset(
            g.MapDataset.range(5).seed(1).shuffle().to_iter_dataset().filter(lambda x: x != 2),
            num_epochs,
        )
    )
    _same_run(
        lambda g: g.experimental.RepeatIterDataset(g.MapDataset.range(3).to_iter_dataset()),
        limit=10,
    )
    with pytest.raises(ValueError, match="num_epochs must be positive"):
        spelt.experimental.RepeatIterDataset(spelt.MapDataset.range(3).to_iter_dataset(), 0)

    # An empty parent: the state at the end counts through the (empty) epochs, as Grain's.
    def drained_state(g):
        it = iter(
            g.experimental.RepeatIterDataset(g.MapDataset.range(0).to_iter_dataset(), num_epochs)
        )
        return list(it), it.get_state()

    g_end, s_end = both(drained_state)
    assert s_end == g_end == ([], {"parent": {"next_index": 0}, "epoch": num_epochs})


def test_zip_map():
    def build(g):
        return g.experimental.ZipMapDataset(
            [g.MapDataset.range(6), g.MapDataset.range(10, 16).seed(4).shuffle()]
        )

    g_ds, s_ds = both(build)
    assert len(s_ds) == len(g_ds) == 6
    assert_same([s_ds[i] for i in range(14)], [g_ds[i] for i in range(14)])
    assert_same(s_ds._getitems([3, 9, 0]), g_ds._getitems([3, 9, 0]))
    _same_run(lambda g: build(g).to_iter_dataset())
    assert pickle.loads(pickle.dumps(s_ds))[2] == s_ds[2]
    for parents in ([], [spelt.MapDataset.range(2), spelt.MapDataset.range(3)]):
        with pytest.raises(ValueError):
            spelt.experimental.ZipMapDataset(parents)


def _without_addresses(text):
    """``<pkg.module.Class object at 0x...>`` as ``<Class>``: Grain's and Spelt's datasets
    compared by their str()."""
    return re.sub(r"<[\w.]+\.(\w+) object at 0x[0-9a-f]+>", r"<\1>", text)


def test_zip_str_matches_grain():
    # Grain's text: the parents as a tuple (and ZipMapDataset's missing ")"), for 1 and 3.
    def build(g):
        m = [g.MapDataset.range(3), g.MapDataset.range(3).seed(1).shuffle(), g.MapDataset.range(3)]
        return [
            g.experimental.ZipMapDataset(m[:1]),
            g.experimental.ZipMapDataset(m),
            g.experimental.ZipIterDataset([d.to_iter_dataset() for d in m[:1]]),
            g.experimental.ZipIterDataset([d.to_iter_dataset() for d in m], strict=False),
        ]

    g_ds, s_ds = both(build)
    assert [_without_addresses(str(d)) for d in s_ds] == [_without_addresses(str(d)) for d in g_ds]
    assert _without_addresses(str(s_ds[2])) == (
        "ZipIterDataset(parents=(<PrefetchIterDataset>,), strict=True)"
    )


@pytest.mark.parametrize("strict", [True, False])
def test_zip_iter(strict):
    _same_run(
        lambda g: g.experimental.ZipIterDataset(
            [g.MapDataset.range(7).to_iter_dataset(), g.MapDataset.range(7).to_iter_dataset()],
            strict=strict,
        )
    )

    def uneven(g, lengths):
        return list(
            g.experimental.ZipIterDataset(
                [g.MapDataset.range(n).to_iter_dataset() for n in lengths], strict=strict
            )
        )

    for lengths in ([3, 2], [2, 3, 3], [3, 3, 2]):
        if strict:
            messages = []
            for g in (grain, spelt):
                with pytest.raises(ValueError) as e:
                    uneven(g, lengths)
                messages.append(str(e.value))
            assert messages[0] == messages[1]
        else:
            assert uneven(spelt, lengths) == uneven(grain, lengths)


@pytest.mark.parametrize("weights", [None, [1, 2], [0.25, 0.5, 0.25]])
def test_iter_mix(weights):
    n = 2 if weights is None else len(weights)

    def build(g):
        return g.IterDataset.mix(
            [g.MapDataset.range(10 * i, 10 * i + 6 + i).to_iter_dataset() for i in range(n)],
            weights,
        )

    s_ds = _same_run(build)
    assert str(s_ds) == str(build(grain))


def test_iter_mix_mapping_restores_by_key():
    def build(g, keys):
        return g.IterDataset.mix(
            {k: g.MapDataset.range(i * 100, i * 100 + 20).to_iter_dataset() for i, k in keys},
            {k: i + 1 for i, k in keys},
        )

    _same_run(lambda g: build(g, [(0, "x"), (1, "y")]))
    it = iter(build(spelt, [(0, "x"), (1, "y")]))
    for _ in range(5):
        next(it)
    state = it.get_state()
    # A new component starts from its beginning; the others resume.
    it2 = iter(build(spelt, [(0, "x"), (1, "y"), (2, "z")]))
    it2.set_state(state)
    g_it2 = iter(build(grain, [(0, "x"), (1, "y"), (2, "z")]))
    g_it2.set_state(state)
    assert pipelines.take(it2, 8) == pipelines.take(g_it2, 8)


class _Alternate(spelt.transforms.DatasetSelectionMap):
    def __len__(self):
        return 7

    def __getitem__(self, index):
        return index % 2, index // 2

    def __repr__(self):
        return "_Alternate()"


def test_select_from_datasets():
    ds = spelt.MapDataset.select_from_datasets(
        [spelt.MapDataset.range(4), spelt.MapDataset.range(100, 104)], _Alternate()
    )
    assert len(ds) == 7
    assert list(ds) == [0, 100, 1, 101, 2, 102, 3]
    assert ds._getitems([6, 1, 2]) == [3, 100, 1]
    assert str(ds) == "MixedMapDataset[2 parents]"
    assert repr(ds) == "MixedMapDataset(parent_lengths=[4, 4], selection_map=_Alternate())"
    assert list(ds.to_iter_dataset().batch(3))[0].tolist() == [0, 100, 1]


def test_generic_classes_and_helpers_match_grain():
    for g in (grain, spelt):
        assert g.MapDataset[int] is not None
        assert g.IterDataset[int] is not None
        assert g.DatasetIterator[int] is not None

    def build(g):
        ds = g.MapDataset.source([{"x": np.zeros((2, 3), np.float32), "y": 1}] * 4)
        return g.experimental.apply_transformations(ds, [g.transforms.Batch(2)])

    g_ds, s_ds = both(build)
    assert_same(list(s_ds), list(g_ds))

    for g in (grain, spelt):
        it = iter(g.MapDataset.range(10).to_iter_dataset())
        next(it)
        assert g.experimental.get_next_index(it) == 1
        g.experimental.set_next_index(it, 7)
        assert next(it) == 7


def test_rng_pool_matches_grain():
    draws = []
    for g in (grain, spelt):
        pool = g.experimental.RngPool(42)
        rng = pool.acquire_rng(5, op_seed=3)
        draws.append(rng.integers(0, 2**32, size=4).tolist())
        pool.release_rng(rng)
        draws.append(pool.acquire_rng(6).random())
    assert draws[:2] == draws[2:]


def test_dataset_options_merge_like_grain():
    for g in (grain, spelt):
        o = g.experimental.DatasetOptions
        merged = o(min_shm_size=1024).merge(o(min_shm_size=512, filter_warn_threshold_ratio=None))
        assert merged.min_shm_size == 1024
        assert merged.filter_warn_threshold_ratio is None
        assert o().filter_warn_threshold_ratio == 0.9
    ds = spelt.experimental.WithOptionsIterDataset(
        spelt.MapDataset.range(5).to_iter_dataset(),
        spelt.experimental.DatasetOptions(filter_raise_threshold_ratio=0.5),
    )
    assert list(ds) == list(range(5))
    assert ds.merged_options.filter_raise_threshold_ratio == 0.5


@pytest.mark.parametrize(
    "build",
    [
        lambda g: g.MapDataset.range(20).to_iter_dataset().batch(3),
        lambda g: g.MapDataset.range(20).to_iter_dataset().map(lambda x: x + 1).batch(2),
        lambda g: g.MapDataset.range(20).to_iter_dataset().random_map(lambda x, r: x, seed=3),
        lambda g: g.MapDataset.range(20).to_iter_dataset().map_with_index(lambda i, x: (i, x)),
        lambda g: g.experimental.LimitIterDataset(
            g.MapDataset.range(20).batch(3).to_iter_dataset(), count=5
        ),
        lambda g: g.experimental.ThreadPrefetchIterDataset(
            g.MapDataset.range(20).to_iter_dataset().batch(4), prefetch_buffer_size=2
        ),
        # seed() on an IterDataset: its iterator is its parent's (Grain: a copy of the dataset).
        lambda g: g.MapDataset.range(20).to_iter_dataset().seed(5),
        lambda g: g.MapDataset.range(20).to_iter_dataset().seed(5).random_map(lambda x, r: x),
        lambda g: g.MapDataset.range(20).to_iter_dataset().seed(5).map(lambda x: x).batch(3),
        lambda g: g.MapDataset.range(20).seed(5).shuffle().to_iter_dataset().seed(6).batch(2),
    ],
    ids=[
        "batch",
        "map_batch",
        "random_map",
        "map_with_index",
        "limit",
        "thread_prefetch",
        "seed",
        "seed_random_map",
        "seed_map_batch",
        "seed_shuffle_seed_batch",
    ],
)
def test_next_index_through_ops_matches_grain(build):
    # Grain's get_next_index / set_next_index go through each iterator: a batch counts
    # batches, random_map / map_with_index / limit count their elements.
    def run(g):
        it = iter(build(g))
        out = [next(it), next(it)]
        out.append(g.experimental.get_next_index(it))
        g.experimental.set_next_index(it, 4)
        out += [g.experimental.get_next_index(it), next(it), it.get_state()]
        return out

    g_out, s_out = both(run)
    assert_same(s_out, g_out)


def test_next_index_of_one_interleaved_dataset_matches_grain():
    # Grain's interleave asks its one dataset's iterator (and refuses with several).
    def run(g):
        batches = g.MapDataset.range(20).to_iter_dataset().batch(3)
        it = iter(g.experimental.InterleaveIterDataset([batches], cycle_length=2))
        out = [g.experimental.get_next_index(it), next(it), next(it)]
        out.append(g.experimental.get_next_index(it))
        g.experimental.set_next_index(it, 4)
        out += [g.experimental.get_next_index(it), next(it)]
        two = iter(g.experimental.InterleaveIterDataset([batches, batches], cycle_length=2))
        for call in (g.experimental.get_next_index, lambda i: g.experimental.set_next_index(i, 1)):
            with pytest.raises(NotImplementedError, match="more than one dataset"):
                call(two)
        return out

    g_out, s_out = both(run)
    assert_same(s_out, g_out)


def test_next_index_after_a_filter_matches_grain():
    # A filter cannot tell its next index; a counting op above it still counts its own
    # elements (Grain's map_with_index reads its counter), but cannot move its parent.
    def run(g):
        kept = g.MapDataset.range(20).to_iter_dataset().filter(lambda x: x % 3 != 0)
        it = iter(kept)
        next(it)
        for call in (g.experimental.get_next_index, lambda i: g.experimental.set_next_index(i, 1)):
            with pytest.raises(NotImplementedError):
                call(it)
        counted = iter(kept.map_with_index(lambda i, x: (i, x)))
        out = [next(counted), next(counted), g.experimental.get_next_index(counted)]
        with pytest.raises(NotImplementedError):
            g.experimental.set_next_index(counted, 5)
        return out

    g_out, s_out = both(run)
    assert_same(s_out, g_out)


def _twice(g):
    methods = {"max_fan_out": 2, "flat_map": lambda self, x: [x, x]}
    return type("Twice", (g.experimental.FlatMapTransform,), methods)()


MAP_PARENT_OPS = {
    "mix": lambda g, m: g.IterDataset.mix([m, g.MapDataset.range(10, 13)]),
    "zip": lambda g, m: g.experimental.ZipIterDataset([m.to_iter_dataset(), m]),
    "repeat": lambda g, m: g.experimental.RepeatIterDataset(m, 2),
    "cache": lambda g, m: g.experimental.CacheIterDataset(m),
    "thread_prefetch": lambda g, m: g.experimental.ThreadPrefetchIterDataset(
        m, prefetch_buffer_size=2
    ),
    "limit": lambda g, m: g.experimental.LimitIterDataset(m, 3),
    "rebatch": lambda g, m: g.experimental.RebatchIterDataset(m.batch(4), 3),
    "window_shuffle": lambda g, m: g.experimental.WindowShuffleIterDataset(
        m, window_size=3, seed=1
    ),
    "with_options": lambda g, m: g.experimental.WithOptionsIterDataset(
        m, g.experimental.DatasetOptions()
    ),
    "flat_map": lambda g, m: g.experimental.FlatMapIterDataset(m, _twice(g)),
}


@pytest.mark.parametrize("name", sorted(MAP_PARENT_OPS))
def test_iter_operations_take_map_dataset_parents(name):
    # Grain's IterDataset operations iterate their parents, so a MapDataset parent works.
    def run(g):
        it = iter(MAP_PARENT_OPS[name](g, g.MapDataset.range(6)))
        return [(pipelines.describe(x), it.get_state()) for x in it]

    g_out, s_out = both(run)
    assert s_out == g_out


@pytest.mark.parametrize("name", sorted(MAP_PARENT_OPS))
def test_map_dataset_parents_are_no_extra_seed_level(name):
    # The MapDataset is the operation's parent, as in Grain: default seeds derive as Grain's.
    def run(g):
        ds = MAP_PARENT_OPS[name](g, g.MapDataset.range(6).seed(3))
        return [pipelines.describe(x) for x in ds.random_map(lambda x, rng: (x, rng.random()))]

    g_out, s_out = both(run)
    assert s_out == g_out
