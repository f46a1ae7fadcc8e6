"""grain.experimental.RebatchIterDataset against Grain 0.2.18: outputs (dtypes, views and
concatenations), get_state() after every element, restore from every position in fresh
iterators (in a new process: the rebatch pipeline of pipelines.py, run by test_checkpoint.py),
above 0 and 2 workers."""

from __future__ import annotations

import grain
import numpy as np
import pytest

import pipelines
import spelt
from pipelines import assert_same, both, timeout  # noqa: F401


@pytest.mark.parametrize("parent_batch", [1, 3, 4, 7])
@pytest.mark.parametrize("batch_size", [1, 2, 4, 5])
@pytest.mark.parametrize("drop_remainder", [False, True])
def test_matches_grain(parent_batch, batch_size, drop_remainder):
    def build(g):
        return g.experimental.RebatchIterDataset(
            g.MapDataset.range(13).to_iter_dataset().batch(parent_batch),
            batch_size,
            drop_remainder=drop_remainder,
        )

    # At the end, Grain's restored iterator may return an extra empty batch (see below).
    pipelines.assert_same_run(build, grain_restores_at_end=False)
    assert str(build(spelt)) == (
        f"RebatchIterDataset(batch_size={batch_size}, drop_remainder={drop_remainder})"
    )


def test_restore_at_the_end_returns_no_empty_batch():
    """A state whose parent batch is used up restores, in Grain 0.2.18, to an iterator that
    returns one empty batch before it stops; Spelt's stops (docs/compatibility.md)."""

    def build(g):
        return g.experimental.RebatchIterDataset(
            g.MapDataset.range(4).to_iter_dataset().batch(2), 2
        )

    outs = {}
    for g in (grain, spelt):
        it = iter(build(g))
        next(it), next(it)  # the last batch; StopIteration not yet seen
        restored = iter(build(g))
        restored.set_state(it.get_state())
        outs[g] = list(restored)
    assert [x.shape for x in outs[grain]] == [(0,)]
    assert outs[spelt] == []


def test_trees_dtypes_and_uneven_parent_batches():
    """Dict / tuple leaves of several dtypes and trailing shapes; parent batches of changing
    sizes (a filter before batch, a partial last batch); concatenation promotes dtypes."""

    def build(g):
        ds = (
            g.MapDataset.range(29)
            .map(
                lambda x: {
                    "a": np.full((2,), x, np.int32),
                    "b": (np.float32(x) / 2, np.uint8(x)),
                }
            )
            .to_iter_dataset()
            .filter(lambda e: int(e["b"][1]) % 5 != 0)
            .batch(6)
        )
        return g.experimental.RebatchIterDataset(ds, 4)

    pipelines.assert_same_run(build, grain_restores_at_end=False)


def test_above_workers_equals_grain_without():
    def build(g, workers):
        ds = g.MapDataset.range(25).map(lambda x: x * 2).to_iter_dataset()
        if workers:
            ds = ds.mp_prefetch(g.multiprocessing.MultiprocessingOptions(num_workers=workers))
        return g.experimental.RebatchIterDataset(ds.batch(4), 3)

    for workers in (0, 2):
        pipelines.assert_same_with_workers(build, workers, (0, 4, -1))


def test_a_batch_inside_one_parent_batch_is_a_view():
    ds = spelt.experimental.RebatchIterDataset(
        spelt.MapDataset.source(np.arange(12)).to_iter_dataset().batch(6), 3
    )
    first = next(iter(ds))
    assert not first.flags.owndata


def test_errors():
    ds = spelt.MapDataset.range(5).to_iter_dataset()
    with pytest.raises(ValueError, match="batch_size must be positive"):
        spelt.experimental.RebatchIterDataset(ds.batch(2), 0)
    with pytest.raises(ValueError, match="leading batch dimension"):
        next(iter(spelt.experimental.RebatchIterDataset(ds, 2)))
    empty = spelt.MapDataset.range(4).map(lambda x: np.zeros((0,))).to_iter_dataset()
    with pytest.raises(ValueError, match="starting batch size of 0"):
        next(iter(spelt.experimental.RebatchIterDataset(empty, 2)))
    ragged = spelt.MapDataset.range(4).map(lambda x: np.zeros((x % 2 + 1,))).to_iter_dataset()
    with pytest.raises(ValueError, match="cannot concatenate"):
        list(spelt.experimental.RebatchIterDataset(ragged.batch(1), 2))
