"""Execution summary: per-stage counters of profiled pipelines (python/spelt/_summary.py and
cpp/src/exec/stage_stats.cc), its table, picture and the ``spelt profile`` command.

Tracking must never change a pipeline's output or states, so each profiled pipeline is
compared element by element, state by state, with the same pipeline untracked.
"""

import json
import logging
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import worker_pipelines
import spelt
import spelt.python
from spelt import _summary
from spelt.experimental import DatasetOptions, ExecutionTrackingMode, WithOptionsIterDataset

TRACKED = DatasetOptions(execution_tracking_mode=ExecutionTrackingMode.STAGE_TIMING)


def _slow(x):
    time.sleep(0.002)
    return {"x": np.full((4,), x, np.int64)}


def _pipelines():
    base = spelt.MapDataset.range(60).seed(3).shuffle()
    return {
        "native": base.to_iter_dataset().batch(4),
        "python": base.map(lambda x: x * 3).filter(lambda x: x % 2 == 0).to_iter_dataset(),
        "iter-ops": base.to_iter_dataset().map(lambda x: x + 1).batch(3, drop_remainder=True),
        "thread-prefetch": spelt.experimental.ThreadPrefetchIterDataset(
            base.map(lambda x: [x]).to_iter_dataset(), prefetch_buffer_size=2
        ),
        "workers": base.map(lambda x: x - 1)
        .to_iter_dataset()
        .mp_prefetch(spelt.MultiprocessingOptions(num_workers=2)),
    }


def _read(it):
    return [(np.asarray(e).tolist(), it.get_state()) for e in it]


@pytest.mark.parametrize("name", list(_pipelines()))
def test_tracking_keeps_output_and_states(name):
    ds = _pipelines()[name]
    tracked = WithOptionsIterDataset(ds, TRACKED)
    it = iter(tracked)
    assert _read(it) == _read(iter(ds))
    summary = spelt.experimental.get_execution_summary(it)
    assert summary.output.elements == len(_read(iter(ds)))
    if name != "workers":
        spelt.experimental.assert_equal_output_after_checkpoint(tracked)
    else:  # (two iterators alive at once get two pools: restore once, not from every position)
        it = iter(tracked)
        head = [next(it) for _ in range(7)]
        restored = iter(tracked)
        restored.set_state(it.get_state())
        assert head + list(restored) == list(ds)


def test_tracked_iterators_share_the_warm_worker_pool():
    ds = _pipelines()["workers"]
    tracked = WithOptionsIterDataset(ds, TRACKED)
    expected = list(ds)
    workers = set(worker_pipelines.children(os.getpid()))
    assert len(workers) == 2
    for _ in range(2):
        it = iter(tracked)
        assert list(it) == expected
        summary = spelt.experimental.get_execution_summary(it)
        (stage,) = [s for s in summary.stages if s.kind == "workers"]
        assert stage.worker_busy_s > 0  # the shared pool's time is still counted
    assert set(worker_pipelines.children(os.getpid())) == workers
    profiled = worker_pipelines.loader(2, enable_profiling=True)
    first = list(profiled)
    loader_workers = set(worker_pipelines.children(os.getpid())) - workers
    assert len(loader_workers) == 2
    assert len(list(profiled)) == len(first)  # the next epoch, on the same workers
    assert set(worker_pipelines.children(os.getpid())) - workers == loader_workers


def test_untracked_iterator_has_no_summary():
    it = iter(spelt.MapDataset.range(3).to_iter_dataset())
    with pytest.raises(ValueError, match="does not track stages"):
        spelt.experimental.get_execution_summary(it)


def test_counters_and_bottleneck():
    ds = (
        spelt.MapDataset.range(40)
        .seed(1)  # seed() and WithOptionsIterDataset are no stages, as in Grain
        .map(_slow)
        .to_iter_dataset(spelt.ReadOptions(num_threads=0))
        .batch(8)
    )
    it = iter(WithOptionsIterDataset(ds, TRACKED))
    assert len(list(it)) == 5
    summary = spelt.experimental.get_execution_summary(it)
    names = [s.name.split("(")[0] for s in summary.stages]
    assert names == ["BatchIterDataset", "PrefetchIterDataset", "MapMapDataset", "RangeMapDataset"]
    by_name = {s.name.split("(")[0]: s for s in summary.stages}
    batch, mapped, source = (
        by_name["BatchIterDataset"],
        by_name["MapMapDataset"],
        by_name["RangeMapDataset"],
    )
    assert [s.id for s in summary.stages] == list(range(len(summary.stages)))
    assert batch.id == 0 and batch.inputs == (1,)
    assert (batch.elements, mapped.elements, source.elements) == (5, 40, 40)
    assert batch.bytes_out == 40 * 4 * 8 and mapped.bytes_out == 40 * 4 * 8
    assert mapped.self_time_ns >= 40 * 2e6  # 40 sleeps of 2 ms
    assert batch.total_time_ns >= mapped.total_time_ns >= mapped.self_time_ns
    assert batch.wait_share > 0.9  # the batch stage waits on the map almost all the time
    assert summary.bottleneck is mapped
    table = summary.table()
    first, header = table.splitlines()[:2]
    assert first.startswith("Bottleneck: stage ") and "MapMapDataset" in first
    assert [c.strip() for c in header.split(" | ")][:4] == ["id", "name", "inputs", "elements"]
    assert len(table.splitlines()) == 3 + len(summary.stages)
    assert json.loads(json.dumps(summary.to_dict()))["bottleneck"] == mapped.id
    node = summary.nodes[mapped.id]  # Grain's proto field names
    assert (node.num_produced_elements, node.bytes_produced) == (40, 40 * 4 * 8)
    assert node.total_processing_time_ns == mapped.total_time_ns and not node.is_prefetch
    assert summary.nodes[0].is_output and summary.nodes[0].wait_time_ratio == batch.wait_share


@pytest.mark.parametrize("threads", [0, 2])
def test_filtered_counts_what_each_map_and_filter_dropped(threads):
    ds = (
        spelt.MapDataset.range(24)
        .filter(lambda x: x % 3 != 0)  # drops 8
        .map(lambda x: None if x % 4 == 0 else x)  # drops 4 more (4, 8, 16, 20)
        .to_iter_dataset(spelt.ReadOptions(num_threads=threads))
        .map(lambda x: x)
        .filter(lambda x: x != 5)  # drops 1
        .batch(4)
    )
    it = iter(WithOptionsIterDataset(ds, TRACKED))
    assert sum(len(b) for b in it) == 11
    summary = spelt.experimental.get_execution_summary(it)
    filtered = [(s.name.split("(")[0], s.filtered) for s in summary.stages]
    assert filtered == [
        ("BatchIterDataset", None),
        ("FilterIterDataset", 1),
        ("MapIterDataset", 0),
        ("PrefetchIterDataset", None),
        ("MapMapDataset", 4),
        ("FilterMapDataset", 8),
        ("RangeMapDataset", None),
    ]
    header = summary.table().splitlines()[1]
    assert [c.strip() for c in header.split(" | ")][3:5] == ["elements", "filtered"]


def test_threaded_read_ahead_counts_rows_of_stacked_batches():
    ds = spelt.MapDataset.range(1000).to_iter_dataset(spelt.ReadOptions(num_threads=2)).batch(100)
    it = iter(WithOptionsIterDataset(ds, TRACKED))
    batches = list(it)
    assert len(batches) == 10
    summary = spelt.experimental.get_execution_summary(it)
    assert summary.output.elements == 10
    prefetch = summary.stages[1]
    assert prefetch.kind == "prefetch" and prefetch.elements == 1000
    assert summary.output.bytes_out == 1000 * 8


def test_data_loader_enable_profiling_reports_workers():
    def loader(profiling):
        return spelt.DataLoader(
            data_source=spelt.python.RangeDataSource(0, 40, 1),
            sampler=spelt.python.IndexSampler(
                40, spelt.python.NoSharding(), shuffle=True, seed=1, num_epochs=1
            ),
            operations=[worker_pipelines.SlowMap(), spelt.python.Batch(4)],
            worker_count=2,
            enable_profiling=profiling,
        )

    it = iter(loader(True))
    out = [(b.tolist(), it.get_state()) for b in it]
    plain = iter(loader(False))
    assert out == [(b.tolist(), plain.get_state()) for b in plain]
    summary = spelt.experimental.get_execution_summary(it)
    workers = [s for s in summary.stages if s.kind == "workers"]
    assert len(workers) == 1 and workers[0].parallelism == 2
    assert workers[0].worker_busy_s >= 40 * 0.002
    assert 0 < workers[0].worker_utilization <= 1
    below = [s for s in summary.stages if s.in_workers]
    assert below and all(s.id > workers[0].id for s in below)
    assert "(in workers)" in summary.table()


def test_debug_mode_tracks_and_logs_periodically(monkeypatch, caplog):
    monkeypatch.setattr(_summary, "REPORTING_PERIOD_S", 0.05)
    spelt.config.update("py_debug_mode", True)
    try:
        it = iter(spelt.MapDataset.range(5).map(_slow).to_iter_dataset())
        with caplog.at_level(logging.INFO, logger="spelt"):
            assert len(list(it)) == 5
            time.sleep(0.3)
        assert spelt.experimental.get_execution_summary(it).output.elements == 5
        logged = [r.getMessage() for r in caplog.records if "Execution Summary" in r.getMessage()]
        assert logged and "Bottleneck: stage" in logged[-1]
    finally:
        spelt.config.update("py_debug_mode", False)
    assert not hasattr(iter(spelt.MapDataset.range(5).to_iter_dataset()), "_spelt_tracker")


def _summary_of_slow_pipeline():
    ds = spelt.MapDataset.range(20).map(_slow).to_iter_dataset().batch(5)
    it = iter(WithOptionsIterDataset(ds, TRACKED))
    list(it)
    return spelt.experimental.get_execution_summary(it)


@pytest.mark.parametrize("suffix", ["png", "html"])
def test_plot_execution_summary(tmp_path, suffix):
    path = tmp_path / f"summary.{suffix}"
    spelt.experimental.plot_execution_summary(_summary_of_slow_pipeline(), path)
    data = path.read_bytes()
    if suffix == "png":
        assert data.startswith(b"\x89PNG") and len(data) > 10_000
    else:
        text = data.decode()
        assert "<svg" in text and "Bottleneck: stage" in text and "MapMapDataset" in text


SCRIPT = """
import sys
import spelt
ds = spelt.MapDataset.range(int(sys.argv[1])).map(lambda x: x * 2).to_iter_dataset().batch(4)
print("read", sum(len(b) for b in ds))
"""


def test_profile_command(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "profile.html"
    result = subprocess.run(
        [sys.executable, "-m", "spelt", "profile", "-o", str(out), str(script), "30"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "read 30" in result.stdout
    assert "Bottleneck:" in result.stdout and "BatchIterDataset" in result.stdout
    assert "<svg" in out.read_text()
    empty = tmp_path / "empty.py"
    empty.write_text("print('nothing')\n")
    result = subprocess.run(
        [sys.executable, "-m", "spelt", "profile", str(empty)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 1 and "made no Dataset" in result.stderr
