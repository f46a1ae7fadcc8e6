"""grain.experimental.FlatMapMapDataset (and ``MapDataset.apply`` of a FlatMap) against Grain
0.2.18: elements at every index, length, the max_fan_out error, the batch error, iteration
with states and restore from every position (in a new process: the flat_map_map pipeline of
pipelines.py, run by test_checkpoint.py), under 0 and 2 workers."""

from __future__ import annotations

import sys

import grain
import pytest

import pipelines
import spelt
from pipelines import assert_same, both, timeout  # noqa: F401


def _split(g):
    return pipelines.user_classes(g).Split()


def test_elements_and_length_match_grain():
    g_ds, s_ds = both(lambda g: g.experimental.FlatMapMapDataset(g.MapDataset.range(9), _split(g)))
    assert len(s_ds) == len(g_ds) == 27
    assert [s_ds[i] for i in range(60)] == [g_ds[i] for i in range(60)]
    assert s_ds._getitems(list(range(27))) == g_ds._getitems(list(range(27)))
    assert str(s_ds) == str(g_ds) == "FlatMapMapDataset(transform=Split)"
    inf = both(
        lambda g: g.experimental.FlatMapMapDataset(g.MapDataset.range(3).repeat(), _split(g))
    )
    assert len(inf[1]) == len(inf[0]) == sys.maxsize


def test_iteration_and_states_match_grain():
    build = pipelines.DATASET_PIPELINES["flat_map_map"]["build"]
    g_out, g_states = pipelines.run_with_states(iter(build(grain)), None)
    s_out, s_states = pipelines.run_with_states(iter(build(spelt)), None)
    assert s_out == g_out
    assert s_states == g_states
    spelt.experimental.assert_equal_output_after_checkpoint(build(spelt))


def test_apply_flat_map_on_a_map_dataset_keeps_it_a_map_dataset():
    g_ds, s_ds = both(lambda g: g.MapDataset.range(6).apply([_split(g)]))
    assert isinstance(s_ds, spelt.MapDataset)
    assert [s_ds[i] for i in range(18)] == [g_ds[i] for i in range(18)]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_under_workers_equals_grain_without(num_workers):
    def build(g, workers):
        ds = g.experimental.FlatMapMapDataset(g.MapDataset.range(40), _split(g))
        ds = ds.to_iter_dataset()
        if workers:
            ds = ds.mp_prefetch(g.multiprocessing.MultiprocessingOptions(num_workers=workers))
        return ds.batch(3)

    pipelines.assert_same_with_workers(build, num_workers, (0, 5, -1))


def test_errors_match_grain():
    class Wide(spelt.experimental.FlatMapTransform):
        max_fan_out = 1

        def flat_map(self, x):
            return [x, x]

    ds = spelt.experimental.FlatMapMapDataset(spelt.MapDataset.range(3), Wide())
    with pytest.raises(ValueError, match="exceeds specified max fan-out size"):
        ds[0]
    with pytest.raises(ValueError, match="can not follow `FlatMapMapDataset`"):
        ds.batch(2)
    with pytest.raises(ValueError, match="can not follow `MapDataset.filter`"):
        ds.filter(lambda x: True).batch(2)
    with pytest.raises(TypeError, match="needs a FlatMap transform"):
        spelt.experimental.FlatMapMapDataset(spelt.MapDataset.range(3), lambda x: [x])
