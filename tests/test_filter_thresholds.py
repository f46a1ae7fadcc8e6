"""DatasetOptions' filter thresholds against Grain 0.2.18: a filter that skips nearly every
element warns (filter_warn_threshold_ratio, default 0.9) or raises
(filter_raise_threshold_ratio) with Grain's message, checked per window of 1000 elements, for
IterDataset filters and for to_iter_dataset skipping what a MapDataset filter removed, with
options set anywhere in the pipeline (the outermost win)."""

from __future__ import annotations

import logging

import grain
import pytest
from grain._src.python.dataset.transformations import filter as grain_filter

import spelt
from pipelines import both, timeout  # noqa: F401

_MESSAGE = (
    r"Transformation {name} skipped {percent} % of the last seen 1000 elements. Please check the"
    r" filtering logic. If this is intended, consider pre-filtering the input dataset before"
    r" training. To disable this check, set"
    r" `grain.experimental.DatasetOptions.filter_{kind}_threshold_ratio` used in"
    r" `WithOptionsIterDataset` to `None`."
)


class _GrainLog:
    """Records the warnings of Grain's filter check (absl's log_every_n_seconds, whose output
    depends on how absl logging is set up in the process), every one of them."""

    WARNING = logging.WARNING

    def __init__(self):
        self.messages: list[str] = []

    def log_every_n_seconds(self, level, msg, n_seconds, *args):
        del level, n_seconds
        self.messages.append(msg % args)


@pytest.fixture(autouse=True)
def grain_log(monkeypatch):
    """Grain's warnings recorded; Spelt's let through every time (both libraries log at most
    one per minute in a process)."""
    log = _GrainLog()
    monkeypatch.setattr(grain_filter, "logging", log)
    monkeypatch.setattr(spelt.dataset_options, "WARN_INTERVAL_S", 0)
    return log


def _warnings(caplog, grain_log, g, ds) -> tuple[list, list[str]]:
    """The outputs of ds (of library g) and the filter warnings logged while reading it."""
    caplog.clear()
    grain_log.messages.clear()
    with caplog.at_level(logging.WARNING, logger="spelt"):
        out = list(ds)
    if g is grain:
        return out, list(grain_log.messages)
    return out, [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]


class DropAll(grain.transforms.Filter):
    def filter(self, x):
        return False


class SpeltDropAll(spelt.transforms.Filter):
    def filter(self, x):
        return False


def test_iter_filter_raises_with_grains_message():
    def build(g, drop):
        ds = g.MapDataset.range(1000).to_iter_dataset().filter(drop)
        return g.experimental.WithOptionsIterDataset(
            ds, g.experimental.DatasetOptions(filter_raise_threshold_ratio=0.999)
        )

    messages = []
    for g, drop in ((grain, DropAll()), (spelt, SpeltDropAll())):
        with pytest.raises(ValueError) as e:
            list(build(g, drop))
        messages.append(str(e.value).replace("SpeltDropAll", "DropAll"))
    assert messages[0] == messages[1]
    assert messages[1] == _MESSAGE.format(
        name="FilterDatasetIterator(transform=DropAll)", percent="100.00", kind="raise"
    ).replace("\\", "")


def test_map_filter_warns_by_default_as_grain_does(caplog, grain_log):
    outs, warnings = [], []
    for g in (grain, spelt):
        ds = g.MapDataset.range(2500).filter(lambda x: x % 50 == 0)
        out, w = _warnings(caplog, grain_log, g, ds)
        outs.append(out)
        warnings.append(w)
    assert outs[0] == outs[1]
    assert warnings[1] == warnings[0]
    assert len(warnings[1]) == 2  # two full windows of 1000, each 98 % skipped
    assert warnings[1][0] == _MESSAGE.format(
        name="PrefetchDatasetIterator(read_options=ReadOptions(num_threads=16,"
        " prefetch_buffer_size=500), allow_nones=False)",
        percent="98.00",
        kind="warn",
    ).replace("\\", "")


def test_thresholds_below_ratio_and_disabled(caplog, grain_log):
    for g in (grain, spelt):
        keep_half = g.MapDataset.range(3000).to_iter_dataset().filter(lambda x: x % 2 == 0)
        assert len(_warnings(caplog, grain_log, g, keep_half)[1]) == 0
        quiet = g.experimental.WithOptionsIterDataset(
            g.MapDataset.range(3000).to_iter_dataset().filter(lambda x: False),
            g.experimental.DatasetOptions(filter_warn_threshold_ratio=None),
        )
        assert _warnings(caplog, grain_log, g, quiet) == ([], [])


def test_options_apply_to_filters_after_them_and_merge(caplog, grain_log):
    """Options set below a filter apply to it; the latest (outermost) set value wins."""

    def build(g):
        ds = g.MapDataset.range(2000).to_iter_dataset()
        ds = g.experimental.WithOptionsIterDataset(
            ds, g.experimental.DatasetOptions(filter_raise_threshold_ratio=0.5)
        )
        ds = ds.filter(lambda x: x % 4 == 0)  # 75 % skipped
        return g.experimental.WithOptionsIterDataset(
            ds, g.experimental.DatasetOptions(filter_warn_threshold_ratio=0.6)
        )

    for g in (grain, spelt):
        with pytest.raises(ValueError, match="skipped 75.00 %"):
            list(build(g))

    def outer_wins(g):
        ds = g.experimental.WithOptionsIterDataset(
            build(g), g.experimental.DatasetOptions(filter_raise_threshold_ratio=0.8)
        )
        return ds

    g_out, g_warn = _warnings(caplog, grain_log, grain, outer_wins(grain))
    s_out, s_warn = _warnings(caplog, grain_log, spelt, outer_wins(spelt))
    assert s_out == g_out and len(s_out) == 500
    assert s_warn == g_warn and len(s_warn) == 2


def test_state_is_unaffected():
    g_ds, s_ds = both(
        lambda g: g.MapDataset.range(1500).filter(lambda x: x % 100 == 0).to_iter_dataset()
    )
    it = iter(s_ds)
    next(it)
    assert it.get_state() == {"next_index": 1}
    spelt.experimental.assert_equal_output_after_checkpoint(s_ds)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_map_filter_below_mp_prefetch_raises_in_the_consumer(num_workers):
    """The merged stream is checked, so the result does not depend on the worker count."""
    ds = (
        spelt.MapDataset.range(2000)
        .filter(lambda x: x % 10 == 0)
        .to_iter_dataset()
        .mp_prefetch(spelt.MultiprocessingOptions(num_workers=num_workers))
    )
    ds = spelt.experimental.WithOptionsIterDataset(
        ds, spelt.experimental.DatasetOptions(filter_raise_threshold_ratio=0.85)
    )
    it = iter(ds)
    out = [next(it) for _ in range(100)]  # what passed in the first window of 1000
    assert out == list(range(0, 1000, 10))
    with pytest.raises(ValueError, match=r"skipped 90.00 % of the last seen 1000 elements"):
        next(it)


@pytest.mark.parametrize("num_threads", [1, 2])
@pytest.mark.parametrize("make_ahead", [0, 1])
def test_options_reach_filters_below_thread_prefetch_and_interleave(num_threads, make_ahead):
    # Grain's prefetch_test test_options_after_prefetch: the datasets' iterators are made by
    # the interleave (later, or on threads of their own) and still check the options above.
    def thread_prefetch(g):
        ds = g.MapDataset.source([1, 2, 3]).repeat(1000).filter(lambda x: x > 2)
        return g.experimental.multithread_prefetch(
            ds.to_iter_dataset(), num_threads=num_threads, buffer_size=1
        )

    def interleave(g):
        parts = [g.MapDataset.range(2000).filter(lambda x: x % 5 == 0) for _ in range(3)]
        return g.experimental.InterleaveIterDataset(
            parts, cycle_length=2, num_make_iter_threads=make_ahead
        )

    for build in (thread_prefetch, interleave):
        for g in (grain, spelt):
            options = g.experimental.DatasetOptions(filter_raise_threshold_ratio=0.5)
            with pytest.raises(ValueError, match="filter_raise_threshold_ratio"):
                list(g.experimental.WithOptionsIterDataset(build(g), options))
            assert len(list(build(g))) in (1000, 1200)  # the default options do not raise


@pytest.mark.parametrize("make_ahead", [0, 1])
def test_options_inside_an_interleaved_dataset_reach_its_filters(make_ahead):
    def build(g, threshold):
        part = g.MapDataset.range(3000).filter(lambda x: x % 10 == 0).to_iter_dataset()
        if threshold is not None:
            options = g.experimental.DatasetOptions(filter_raise_threshold_ratio=threshold)
            part = g.experimental.WithOptionsIterDataset(part, options)
        return g.experimental.InterleaveIterDataset(
            [part, g.MapDataset.range(5).to_iter_dataset()],
            cycle_length=2,
            num_make_iter_threads=make_ahead,
        )

    for g in (grain, spelt):
        with pytest.raises(ValueError, match="filter_raise_threshold_ratio"):
            list(build(g, 0.5))
        assert len(list(build(g, 0.95))) == len(list(build(g, None))) == 305
