"""The stream combinators with 2 worker processes: zip, mix, limit, repeat and
select_from_datasets below ``mp_prefetch`` give the outputs and the states they give with 0
workers (which are Grain's: tests/test_combine.py), and a state taken with one worker count
restores with the other."""

from __future__ import annotations

import pipelines
import pytest

import grain
import spelt
from pipelines import assert_same, timeout  # noqa: F401


def _plus(x):
    return x + 1000  # Python work, so mp_prefetch uses worker processes


class _Alternate:
    """Selection map: parent 0 and 1 in turn (Grain's DatasetSelectionMap protocol)."""

    def __len__(self):
        return 9

    def __getitem__(self, index):
        return index % 2, index // 2


def _range(g, *args):
    return g.MapDataset.range(*args).map(_plus)


PIPELINES = {
    "zip_map": lambda g: g.experimental.ZipMapDataset(
        [_range(g, 8), g.MapDataset.range(20, 28).seed(2).shuffle()]
    ).to_iter_dataset(),
    "zip_iter": lambda g: g.experimental.ZipIterDataset(
        [_range(g, 5).to_iter_dataset(), _range(g, 30, 40).to_iter_dataset().batch(2)]
    ),
    "mix_map": lambda g: (
        g.MapDataset.mix([_range(g, 5), _range(g, 50, 58)], [1, 2]).to_iter_dataset().batch(3)
    ),
    "mix_iter": lambda g: g.IterDataset.mix(
        [_range(g, 6).to_iter_dataset(), _range(g, 60, 70).to_iter_dataset()], [2, 1]
    ),
    "limit": lambda g: g.experimental.LimitIterDataset(
        _range(g, 12).seed(3).shuffle().to_iter_dataset().batch(2), 4
    ),
    "repeat_map": lambda g: _range(g, 5).seed(1).shuffle().repeat(3).to_iter_dataset(),
    "repeat_iter": lambda g: g.experimental.RepeatIterDataset(
        _range(g, 5).seed(1).shuffle().to_iter_dataset().filter(lambda x: x % 3 != 0), 2
    ),
    "select_from_datasets": lambda g: g.MapDataset.select_from_datasets(
        [_range(g, 5), _range(g, 100, 104)], _Alternate()
    ).to_iter_dataset(),
}


def _with_workers(ds, workers):
    return ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=workers)) if workers else ds


@pytest.mark.parametrize("name", list(PIPELINES))
def test_two_workers_same_as_none(name):
    build = PIPELINES[name]
    g_out, g_states = pipelines.run_with_states(iter(build(grain)), None)
    s_out, s_states = pipelines.run_with_states(iter(build(spelt)), None)
    assert g_out
    assert_same(s_out, g_out)
    assert s_states == g_states
    w_ds = _with_workers(build(spelt), 2)  # one dataset: its worker processes are reused
    w_out, w_states = pipelines.run_with_states(iter(w_ds), None)
    assert_same(w_out, s_out)
    assert w_states == s_states
    for k in (1, len(s_out) // 2):  # each restores the other's state
        it = iter(w_ds)
        it.set_state(s_states[k])
        assert_same(list(it), s_out[k:])
        it = iter(build(spelt))
        it.set_state(w_states[k])
        assert_same(list(it), s_out[k:])
