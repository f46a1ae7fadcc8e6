"""grain.experimental.InterleaveIterDataset against Grain 0.2.18: outputs, get_state() after
every element, restore from every position (in both libraries, both ways), exhausted
datasets, lazy MapDatasets of datasets, Python-defined datasets, errors, start_prefetch,
mp_prefetch, thread safety. The named pipelines "interleave" and "interleave_lazy" of
pipelines.py are also restored from every position in a new process (test_checkpoint.py)."""

from __future__ import annotations

import grain
import pytest

import pipelines
import spelt
from pipelines import assert_same, both, timeout  # noqa: F401


def _same_run(build, limit=None):
    """Equal outputs and states after every element; a state of either library restores in a
    fresh iterator of both, giving the rest of the stream."""
    g_ds, s_ds = both(build)
    g_out, g_states = pipelines.run_with_states(iter(g_ds), limit)
    s_out, s_states = pipelines.run_with_states(iter(s_ds), limit)
    assert_same(s_out, g_out)
    assert s_states == g_states
    for k, state in enumerate(s_states):
        expected = s_out[k:]
        for ds, st in ((s_ds, state), (s_ds, g_states[k]), (g_ds, state)):
            it = iter(ds)
            it.set_state(st)
            assert_same(pipelines.take(it, len(expected)), expected)
            assert pipelines.take(it, 1) == []
    return s_ds


def _ranges(g, lengths, map_dataset=False):
    out = [g.MapDataset.range(100 * i, 100 * i + n) for i, n in enumerate(lengths)]
    return out if map_dataset else [d.to_iter_dataset() for d in out]


@pytest.mark.parametrize("cycle_length", [1, 2, 3, 4, 10])
@pytest.mark.parametrize("lengths", [[3, 1, 4, 0, 5], [2, 2, 2], [0, 0, 3], [6]])
def test_matches_grain(cycle_length, lengths):
    _same_run(
        lambda g: g.experimental.InterleaveIterDataset(
            _ranges(g, lengths), cycle_length=cycle_length
        )
    )


@pytest.mark.parametrize(
    "threads,ahead,buffer", [(0, 0, 0), (1, 1, 1), (2, 3, 4), (0, 2, 1), (3, 0, 2)]
)
def test_prefetch_options_do_not_change_output_or_state(threads, ahead, buffer):
    _same_run(
        lambda g: g.experimental.InterleaveIterDataset(
            _ranges(g, [4, 2, 5, 3]),
            cycle_length=2,
            num_make_iter_threads=threads,
            make_iter_buffer_size=ahead,
            iter_buffer_size=buffer,
        )
    )


def test_map_datasets_and_lazy_map_dataset_of_datasets():
    _same_run(
        lambda g: g.experimental.InterleaveIterDataset(
            _ranges(g, [3, 5, 2], map_dataset=True), cycle_length=2
        )
    )
    s_ds = _same_run(
        lambda g: g.experimental.InterleaveIterDataset(
            g.MapDataset.range(5)
            .seed(3)
            .shuffle()
            .map(lambda i: g.MapDataset.range(i * 10, i * 10 + i).to_iter_dataset()),
            cycle_length=3,
        ).map(lambda x: x + 1)
    )
    assert str(s_ds.parents[0]) == "InterleaveIterDataset([5 datasets], cycle_length=3)"


def test_python_defined_datasets():
    # User IterDatasets and DatasetIterators: their Python code runs on the prefetch threads.
    _same_run(
        lambda g: g.experimental.InterleaveIterDataset(
            [pipelines.user_classes(g).Counts(n) for n in (3, 1, 4)], cycle_length=2
        ).map(lambda x: x * 2)
    )


def test_get_state_before_next_opens_the_cycle():
    g_ds, s_ds = both(
        lambda g: g.experimental.InterleaveIterDataset(_ranges(g, [2, 3, 1]), cycle_length=2)
    )
    g_it, s_it = iter(g_ds), iter(s_ds)
    state = s_it.get_state()
    assert state == g_it.get_state()
    assert state["next_index_in_datasets"] == 2
    assert state["iterators_in_use_states"] == [{"next_index": 0}, {"next_index": 0}]
    assert list(s_it) == list(g_it) == [0, 100, 1, 101, 102, 200]


def test_exhausted_state_is_the_state_after_the_last_element():
    s_it = iter(
        spelt.experimental.InterleaveIterDataset(
            _ranges(spelt, [1, 3]) + [pipelines.user_classes(spelt).Counts(2)], cycle_length=2
        )
    )
    assert pipelines.take(s_it, 4) == [0, 100, 101, 7]
    state = s_it.get_state()
    assert state["exhausted"] == [0, 0]  # slot 0 took dataset 2 after dataset 0 ended
    assert state["iterators_in_use_indices"] == [2, 1]
    assert list(s_it) == [102, 14]
    state = s_it.get_state()
    assert state["exhausted"] == [1, 1]
    assert state["iterators_in_use_states"] == [{"pos": 2}, {"next_index": 3}]
    assert pipelines.take(s_it, 1) == []


def test_errors_are_raised_in_order_and_the_stream_goes_on():
    def fail_on_3(x):
        if x == 3:
            raise KeyError("three")
        return x

    outputs = {}
    for g in (grain, spelt):
        ds = g.experimental.InterleaveIterDataset(
            [
                g.MapDataset.range(5).to_iter_dataset().map(fail_on_3),
                g.MapDataset.range(10, 13).to_iter_dataset(),
            ],
            cycle_length=2,
        )
        it, out = iter(ds), []
        while True:
            try:
                out.append(next(it))
            except KeyError:
                out.append("error")
            except StopIteration:
                break
        outputs[g] = out
    assert outputs[spelt] == outputs[grain]
    assert "error" in outputs[spelt]


def test_start_prefetch_and_close():
    ds = spelt.experimental.InterleaveIterDataset(_ranges(spelt, [3, 3]), cycle_length=2)
    it = iter(ds)
    it.start_prefetch()
    it.start_prefetch()
    assert list(it) == [0, 100, 1, 101, 2, 102]
    it.close()
    with pytest.raises(ValueError):
        it.start_prefetch()


def test_bad_arguments():
    with pytest.raises(ValueError, match="cycle_length must be positive"):
        spelt.experimental.InterleaveIterDataset(_ranges(spelt, [1]), cycle_length=0)
    with pytest.raises(ValueError, match="iter_buffer_size"):
        spelt.experimental.InterleaveIterDataset(
            _ranges(spelt, [1]), cycle_length=1, iter_buffer_size=-1
        )
    with pytest.raises(TypeError, match="dataset 1 is a list"):
        iter(
            spelt.experimental.InterleaveIterDataset(
                [spelt.MapDataset.range(2), [1, 2]], cycle_length=1
            )
        )
    lazy = spelt.experimental.InterleaveIterDataset(
        spelt.MapDataset.range(2).map(lambda i: i), cycle_length=2
    )
    with pytest.raises(TypeError, match="dataset 0 is a int"):
        list(lazy)
    it = iter(spelt.experimental.InterleaveIterDataset(_ranges(spelt, [2, 2]), cycle_length=2))
    with pytest.raises(ValueError, match="cycle_length = 2"):
        it.set_state({**it.get_state(), "exhausted": [0]})


def test_empty():
    ds = spelt.experimental.InterleaveIterDataset([], cycle_length=3)
    assert list(ds) == []


def _same_under_mp_prefetch(build, workers):
    """Spelt's build(spelt) below mp_prefetch(workers) gives Grain's outputs and states without
    workers, and restores from every position."""
    g_out, g_states = pipelines.run_with_states(iter(build(grain)), None)
    s_ds = build(spelt).mp_prefetch(spelt.multiprocessing.MultiprocessingOptions(workers))
    s_out, s_states = pipelines.run_with_states(iter(s_ds), None)
    assert_same(s_out, g_out)
    assert s_states == g_states
    spelt.experimental.assert_equal_output_after_checkpoint(s_ds)


@pytest.mark.parametrize("workers", [0, 2])
def test_under_mp_prefetch(workers):
    # Spelt's output and state do not depend on the number of workers (Grain's do: it
    # interleaves each worker's slice of the datasets); they equal Grain's with no workers.
    def build(g):
        files = g.MapDataset.range(6).map(
            lambda i: g.MapDataset.range(i * 10, i * 10 + i % 3 + 1).map(lambda x: x * 2)
        )
        return g.experimental.InterleaveIterDataset(files, cycle_length=4).batch(2)

    _same_under_mp_prefetch(build, workers)


def test_thread_safety():
    ds = spelt.experimental.InterleaveIterDataset(
        [spelt.MapDataset.range(i * 1000, i * 1000 + 300).to_iter_dataset() for i in range(5)],
        cycle_length=3,
        iter_buffer_size=4,
    )
    seen = pipelines.drain_in_threads(iter(ds))
    got = sorted(x for out in seen for x in out)
    assert got == sorted(ds)
    assert len(got) == 1500


def test_shard_states_all_exhausted_restore_to_the_end():
    """set_shard_states of datasets that are all exhausted (the shard states at the end of the
    stream) resumes at the end: the exhausted datasets are not opened again."""
    datasets = [spelt.MapDataset.range(3), spelt.MapDataset.range(2)]
    it = iter(spelt.experimental.InterleaveIterDataset(datasets, cycle_length=2))
    assert sorted(it) == [0, 0, 1, 1, 2]
    shards = it.get_shard_states()
    assert [s["exhausted"] for s in shards] == [1, 1]
    restored = iter(spelt.experimental.InterleaveIterDataset(datasets, cycle_length=2))
    restored.set_shard_states(shards)
    assert list(restored) == []
