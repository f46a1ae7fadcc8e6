"""grain.experimental.WindowShuffleMapDataset and WindowShuffleIterDataset against Grain 0.2.18:
outputs, get_state() after every element, restore from every position in fresh iterators (and
in a new process: the window_shuffle_* pipelines of pipelines.py, run by test_checkpoint.py),
under 0 and 2 workers, and Spelt's deliberate differences (docs/compatibility.md)."""

from __future__ import annotations

import grain
import pytest

import pipelines
import spelt
from pipelines import both, timeout  # noqa: F401


@pytest.mark.parametrize("n, window_size", [(10, 4), (12, 3), (7, 7), (5, 9), (30, 1)])
def test_iter_matches_grain(n, window_size):
    out = pipelines.assert_same_run(
        lambda g: g.experimental.WindowShuffleIterDataset(
            g.MapDataset.range(n).to_iter_dataset(), window_size=window_size, seed=11
        )
    )
    assert sorted(out) == list(range(n))


def test_iter_over_filter_and_batch_matches_grain():
    pipelines.assert_same_run(
        lambda g: g.experimental.WindowShuffleIterDataset(
            g.MapDataset.range(40).to_iter_dataset().filter(lambda x: x % 3 != 1).batch(2),
            window_size=4,
            seed=3,
        )
    )


def test_iter_restore_on_fresh_iterator_uses_the_window_seed():
    """grain#1179: a checkpoint halfway through a window, restored in a fresh iterator, goes
    on with the same elements and the same window index."""

    def build(g):
        return g.experimental.WindowShuffleIterDataset(
            g.MapDataset.range(1000).to_iter_dataset(), window_size=10, seed=42
        )

    it = iter(build(spelt))
    for _ in range(55):
        next(it)
    state = it.get_state()
    want = [next(it) for _ in range(20)]
    restored = iter(build(spelt))
    restored.set_state(state)
    assert [next(restored) for _ in range(20)] == want
    assert restored.get_state() == it.get_state()
    assert restored.get_state()["window_index"] == 7


@pytest.mark.parametrize("n, window_size", [(12, 4), (24, 6), (8, 8), (9, 3)])
def test_map_matches_grain_when_windows_divide_the_length(n, window_size):
    g_ds, s_ds = both(
        lambda g: g.experimental.WindowShuffleMapDataset(
            g.MapDataset.range(n), window_size=window_size, seed=5
        )
    )
    assert len(s_ds) == len(g_ds) == n
    assert [s_ds[i] for i in range(3 * n)] == [g_ds[i] for i in range(3 * n)]
    assert s_ds._getitems([1, n + 2, 0]) == g_ds._getitems([1, n + 2, 0])
    assert str(s_ds) == str(g_ds) == "WindowShuffleMapDataset"
    pipelines.assert_same_run(
        lambda g: g.experimental.WindowShuffleMapDataset(
            g.MapDataset.range(n), window_size=window_size, seed=5
        ).to_iter_dataset()
    )


def test_map_last_window_is_a_permutation_of_the_remainder():
    """Grain's last window reads past the epoch: range(10), window 4, seed 0 gives
    [0, 3, 1, 2, 5, 6, 7, 4, 8, 1] (9 lost, 1 twice). Spelt's epochs are permutations, the
    full windows equal Grain's."""
    g_ds, s_ds = both(
        lambda g: g.experimental.WindowShuffleMapDataset(
            g.MapDataset.range(10), window_size=4, seed=0
        )
    )
    grain_epoch = [g_ds[i] for i in range(10)]
    assert sorted(grain_epoch) != list(range(10))
    for epoch in range(3):
        got = [s_ds[epoch * 10 + i] for i in range(10)]
        assert sorted(got[:4]) == [0, 1, 2, 3]
        assert sorted(got[4:8]) == [4, 5, 6, 7]
        assert sorted(got[8:]) == [8, 9]
    assert [s_ds[i] for i in range(8)] == grain_epoch[:8]


def test_seeds_past_32_bits_wrap():
    """Grain raises TypeError once seed + window index reaches 2**32; Spelt wraps."""
    top = spelt.experimental.WindowShuffleMapDataset(
        spelt.MapDataset.range(16), window_size=8, seed=2**32 - 1
    )
    zero = spelt.experimental.WindowShuffleMapDataset(
        spelt.MapDataset.range(16), window_size=8, seed=0
    )
    assert [top[i] - 8 for i in range(8, 16)] == [zero[i] for i in range(8)]
    with pytest.raises(TypeError):
        list(
            grain.experimental.WindowShuffleIterDataset(
                grain.MapDataset.range(16).to_iter_dataset(), window_size=8, seed=2**32 - 1
            )
        )
    it = spelt.experimental.WindowShuffleIterDataset(
        spelt.MapDataset.range(16).to_iter_dataset(), window_size=8, seed=2**32 - 1
    )
    assert sorted(it) == list(range(16))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_under_workers_equals_grain_without(num_workers):
    """Map version below mp_prefetch (with Python so that worker processes compute it), Iter
    version above it: the outputs do not depend on the worker count."""

    def build(g, workers):
        ds = g.experimental.WindowShuffleMapDataset(
            g.MapDataset.range(30).map(lambda x: x + 100), window_size=5, seed=8
        ).to_iter_dataset()
        if workers:
            ds = ds.mp_prefetch(g.multiprocessing.MultiprocessingOptions(num_workers=workers))
        return g.experimental.WindowShuffleIterDataset(ds, window_size=4, seed=1)

    pipelines.assert_same_with_workers(build, num_workers, (0, 7, 15, 30))


def test_bad_arguments():
    ds = spelt.MapDataset.range(4)
    with pytest.raises(ValueError, match="window_size must be positive"):
        spelt.experimental.WindowShuffleMapDataset(ds, window_size=0, seed=1)
    with pytest.raises(ValueError, match="window_size must be positive"):
        spelt.experimental.WindowShuffleIterDataset(ds.to_iter_dataset(), window_size=-2, seed=1)
    with pytest.raises(TypeError, match="seed must be an int"):
        spelt.experimental.WindowShuffleMapDataset(ds, window_size=2, seed=None)
    with pytest.raises(ValueError, match="seed must be in"):
        spelt.experimental.WindowShuffleIterDataset(ds.to_iter_dataset(), window_size=2, seed=-1)
    with pytest.raises(TypeError, match="window_size must be an int"):
        spelt.experimental.WindowShuffleMapDataset(ds, window_size=2.0, seed=1)
