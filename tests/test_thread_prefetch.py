"""grain.experimental.ThreadPrefetchIterDataset, ThreadPrefetchDatasetIterator,
multithread_prefetch and CacheIterDataset against Grain 0.2.18: outputs, get_state() after
every element, restore from every position (both libraries, both ways), errors, read-ahead
that never counts in the state, mp_prefetch, thread safety. The named pipelines
"thread_prefetch", "multithread_prefetch" and "cache_repeat" of pipelines.py are also
restored from every position in a new process (test_checkpoint.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import grain
import pytest

import pipelines
import spelt
from pipelines import assert_same, both, timeout  # noqa: F401
from test_interleave import _same_run, _same_under_mp_prefetch


@pytest.mark.parametrize("buffer_size", [0, 1, 5, 100])
def test_thread_prefetch_matches_grain(buffer_size):
    s_ds = _same_run(
        lambda g: g.experimental.ThreadPrefetchIterDataset(
            g.MapDataset.range(17)
            .seed(4)
            .shuffle()
            .to_iter_dataset()
            .filter(lambda x: x % 4 != 1)
            .batch(2),
            prefetch_buffer_size=buffer_size,
        ).map(lambda x: x * 10)
    )
    assert str(s_ds.parents[0]) == f"ThreadPrefetchIterDataset(prefetch_buffer_size={buffer_size})"


def test_thread_prefetch_of_a_python_dataset_under_python_maps():
    # The consumer holds the GIL (Python map above), the thread runs the Python parent.
    _same_run(
        lambda g: g.experimental.ThreadPrefetchIterDataset(
            pipelines.user_classes(g).Counts(9).map(lambda x: x + 1), prefetch_buffer_size=2
        ).map(lambda x: -x)
    )


def test_read_ahead_never_counts_and_restore_drops_it():
    reads = []

    def count(x):
        reads.append(x)
        return x

    ds = spelt.experimental.ThreadPrefetchIterDataset(
        spelt.MapDataset.range(50).to_iter_dataset().map(count), prefetch_buffer_size=8
    )
    it = iter(ds)
    assert next(it) == 0
    deadline = time.monotonic() + 10
    while len(reads) < 9 and time.monotonic() < deadline:  # the thread reads ahead
        time.sleep(0.01)
    assert len(reads) >= 9
    assert it.get_state() == {"next_index": 1}
    it.set_state({"next_index": 30})
    assert it.get_state() == {"next_index": 30}
    assert pipelines.take(it, 2) == [30, 31]
    assert it.get_state() == {"next_index": 32}


def test_thread_prefetch_errors_in_order():
    def fail_on_4(x):
        if x == 4:
            raise ValueError("four")
        return x

    outputs = {}
    for g in (grain, spelt):
        ds = g.experimental.ThreadPrefetchIterDataset(
            g.MapDataset.range(8).to_iter_dataset().map(fail_on_4), prefetch_buffer_size=3
        )
        it, out = iter(ds), []
        while True:
            try:
                out.append(next(it))
            except ValueError:
                out.append(("error", it.get_state()))
            except StopIteration:
                break
        outputs[g] = out
    assert outputs[grain] == [0, 1, 2, 3, ("error", {"next_index": 4}), 5, 6, 7]
    # Spelt's state after the error is where the iterator continues (Grain's says 4, so a
    # checkpoint taken there raises again on restore): docs/compatibility.md.
    assert outputs[spelt] == [0, 1, 2, 3, ("error", {"next_index": 5}), 5, 6, 7]
    for buffer_size in (0, 3):
        ds = spelt.experimental.ThreadPrefetchIterDataset(
            spelt.MapDataset.range(8).to_iter_dataset().map(fail_on_4),
            prefetch_buffer_size=buffer_size,
        )
        it = iter(ds)
        with pytest.raises(ValueError):
            [next(it) for _ in range(5)]
        restored = iter(ds)
        restored.set_state(it.get_state())
        assert list(restored) == list(it) == [5, 6, 7]


def test_start_prefetch_passes_through_ops_above_a_thread_prefetch():
    # Grain's DatasetIterator.start_prefetch calls its parents' start_prefetch, so the thread
    # prefetch under map and batch starts reading before the first next().
    started = threading.Event()

    def mark(x):
        started.set()
        return x

    inner = spelt.MapDataset.range(10).to_iter_dataset().map(mark)
    ds = spelt.experimental.ThreadPrefetchIterDataset(inner, prefetch_buffer_size=2)
    it = iter(ds.map(lambda x: x + 1).batch(2))
    it.start_prefetch()
    assert started.wait(timeout=60)
    assert next(it).tolist() == [1, 2]


def test_thread_prefetch_bad_buffer_size():
    with pytest.raises(ValueError, match="greater than or equal to 0, got -1"):
        spelt.experimental.ThreadPrefetchIterDataset(
            spelt.MapDataset.range(3).to_iter_dataset(), prefetch_buffer_size=-1
        )


@pytest.mark.parametrize("buffer_size", [0, 3])
def test_thread_prefetch_dataset_iterator(buffer_size):
    for make_parent in (
        lambda g: pipelines.user_classes(g).CountIterator(6),
        lambda g: iter(g.MapDataset.range(6).to_iter_dataset().map(lambda x: x * 3)),
    ):
        g_it, s_it = (
            g.experimental.ThreadPrefetchDatasetIterator(make_parent(g), buffer_size)
            for g in (grain, spelt)
        )
        g_out, g_states = pipelines.run_with_states(g_it, None)
        s_out, s_states = pipelines.run_with_states(s_it, None)
        assert s_out == g_out and s_states == g_states
        for k, state in enumerate(s_states):
            it = spelt.experimental.ThreadPrefetchDatasetIterator(make_parent(spelt), buffer_size)
            it.set_state(state)
            assert list(it) == s_out[k:]
        s_it.close()


@pytest.mark.parametrize("num_threads", [0, 1, 3])
def test_multithread_prefetch_matches_grain(num_threads):
    _same_run(
        lambda g: g.experimental.multithread_prefetch(
            g.MapDataset.range(20).seed(1).shuffle().map(lambda x: x * 2).to_iter_dataset(),
            num_threads,
            2,
        ).batch(3)
    )


def test_multithread_prefetch_of_an_unsliceable_source():
    with pytest.raises(ValueError, match="Cannot slice"):
        spelt.experimental.multithread_prefetch(pipelines.user_classes(spelt).Counts(3), 2, 1)


@pytest.mark.parametrize("workers", [0, 2])
def test_thread_prefetch_under_mp_prefetch(workers):
    def build(g):
        return g.experimental.ThreadPrefetchIterDataset(
            g.MapDataset.range(15).map(lambda x: x + 3).to_iter_dataset().batch(4),
            prefetch_buffer_size=2,
        )

    _same_under_mp_prefetch(build, workers)


def test_thread_prefetch_thread_safety():
    ds = spelt.experimental.ThreadPrefetchIterDataset(
        spelt.MapDataset.range(2000).to_iter_dataset(), prefetch_buffer_size=16
    )
    seen = pipelines.drain_in_threads(iter(ds))
    assert sorted(x for out in seen for x in out) == list(range(2000))


# CacheIterDataset.


def test_cache_matches_grain():
    _same_run(
        lambda g: g.experimental.RepeatIterDataset(
            g.experimental.CacheIterDataset(
                g.MapDataset.range(7).seed(5).shuffle().to_iter_dataset().map(lambda x: x * x)
            ),
            num_epochs=3,
        )
    )
    _same_run(lambda g: g.experimental.CacheIterDataset(g.MapDataset.range(0).to_iter_dataset()))


def test_cache_reads_the_parent_once():
    reads = []

    def count(x):
        reads.append(x)
        return x

    ds = spelt.experimental.RepeatIterDataset(
        spelt.experimental.CacheIterDataset(
            spelt.experimental.LimitIterDataset(
                spelt.MapDataset.range(20).to_iter_dataset().map(count), 10
            )
        ),
        num_epochs=3,
    )
    assert list(ds) == list(range(10)) * 3
    assert reads == list(range(10))


@pytest.mark.parametrize("workers", [0, 2])
def test_cache_under_mp_prefetch(workers):
    ds = spelt.experimental.CacheIterDataset(
        spelt.MapDataset.range(12).map(lambda x: x - 1).to_iter_dataset()
    ).mp_prefetch(spelt.multiprocessing.MultiprocessingOptions(workers))
    it = iter(ds)
    state = it.get_state()
    assert list(it) == list(range(-1, 11))
    it.set_state(state)
    assert list(it) == list(range(-1, 11))
    spelt.experimental.assert_equal_output_after_checkpoint(ds)


def test_cache_str():
    ds = spelt.experimental.CacheIterDataset(spelt.MapDataset.range(2).to_iter_dataset())
    assert str(ds).startswith("CacheIterDataset(parent=")


@pytest.mark.parametrize("sequential_slice", [False, True])
def test_multithread_prefetch_random_map_and_sequential_slice(sequential_slice):
    # Each shard's random_map draws its own numbers, as Grain's does under its
    # MultiprocessingContext; contiguous shards with sequential_slice.
    s_ds = _same_run(
        lambda g: g.experimental.multithread_prefetch(
            g.MapDataset.range(2, 40, 3)
            .to_iter_dataset()
            .random_map(lambda x, rng: (x, int(rng.integers(1 << 40))), seed=7),
            4,
            1,
            sequential_slice=sequential_slice,
        )
    )
    draws = [d for _, d in s_ds]
    assert len(set(draws)) == len(draws)


def test_process_exits_cleanly_with_prefetch_threads_running(tmp_path):
    # Threads that run Python are stopped at exit, before the interpreter ends them.
    script = tmp_path / "exit.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {pipelines.TESTS_DIR!r})\n"
        "import pipelines, spelt\n"
        "counts = pipelines.user_classes(spelt).Counts\n"
        "it = iter(spelt.experimental.ThreadPrefetchIterDataset(\n"
        "    counts(10**9).map(lambda x: x + 1), prefetch_buffer_size=4))\n"
        "inter = iter(spelt.experimental.InterleaveIterDataset(\n"
        "    [counts(10**9) for _ in range(3)], cycle_length=2, iter_buffer_size=3))\n"
        "print(next(it), next(inter), next(inter))\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["8", "7", "7"]
