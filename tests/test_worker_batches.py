"""``to_iter_dataset().batch(n)`` over worker processes (``mp_prefetch``, a DataLoader's Batch
with workers): the workers compute whole batches (spelt/batched_read_ahead.h), and the output,
the states, the restores and the errors are those of batching element by element without
workers."""

import contextlib
import gc
import os
import signal
import time

import numpy as np
import pytest

import spelt
from spelt.transformations import prefetch
import worker_pipelines as wp

_TWO = spelt.MultiprocessingOptions(num_workers=2)


@pytest.fixture(autouse=True)
def no_workers_left_behind():
    yield
    gc.collect()
    deadline = time.monotonic() + 2
    try:
        while wp.children(os.getpid()):
            assert time.monotonic() < deadline, f"workers remain: {wp.children(os.getpid())}"
            time.sleep(0.02)
    finally:  # what a test leaves running fails that test, not every test after it
        for pid in wp.children(os.getpid()):
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


@pytest.fixture
def requests(monkeypatch):
    """The `batching` of every chunk the consumer asks the workers for."""
    seen = []

    class Lease:
        def __init__(self, lease):
            self._lease = lease

        def submit(self, begin, count, batching=None):
            seen.append(batching)
            return self._lease.submit(begin, count, batching)

        def close(self):
            self._lease.close()

    class Keeper:
        def __init__(self, keeper):
            self._keeper = keeper

        def acquire(self):
            return Lease(self._keeper.acquire())

    monkeypatch.setattr(prefetch.ProcessPrefetchIterDataset, "keeper_observer", Keeper)
    return seen


def _steps(it):
    """(batch as lists, or the error's type and message; the state after it), to the end."""
    steps = []
    while True:
        try:
            x = next(it)
        except StopIteration:
            return steps
        except wp.TransformError as e:
            x = f"error: {e}"
        steps.append((x if isinstance(x, str) else x.tolist(), it.get_state()))


@pytest.mark.parametrize("batch_size,drop", [(1, False), (7, False), (7, True), (64, False)])
def test_batches_and_restores_equal_those_without_workers(requests, batch_size, drop):
    ds = spelt.MapDataset.range(50).seed(3).shuffle().map(wp.Scale(3)).to_iter_dataset()
    ds = ds.batch(batch_size, drop_remainder=drop)
    expected = _steps(iter(ds))
    with_workers = ds.mp_prefetch(_TWO)
    assert _steps(iter(with_workers)) == expected
    assert requests and all(b == (0, batch_size, drop, None) for b in requests)
    for i, (_, state) in enumerate(expected[:3]):
        it = iter(with_workers)
        it.set_state(state)
        assert _steps(it) == expected[i + 1 :]
    restored_at = {s["next_index"] for _, s in expected[:3] if s["next_index"] < 50}
    assert {(n, batch_size, drop, None) for n in restored_at} <= set(requests)


def test_a_data_loader_batch_is_computed_by_its_workers(requests):
    def loader(workers):
        return spelt.DataLoader(
            data_source=[wp.record(i) for i in range(40)],
            sampler=spelt.samplers.IndexSampler(40, shuffle=True, seed=1, num_epochs=1),
            operations=[spelt.transforms.Batch(6)],
            worker_count=workers,
        )

    class Double(spelt.transforms.Map):
        def map(self, x):
            return {**x, "id": x["id"] * 2}

    without = list(loader(0))
    got = list(
        spelt.DataLoader(
            data_source=[wp.record(i) for i in range(40)],
            sampler=spelt.samplers.IndexSampler(40, shuffle=True, seed=1, num_epochs=1),
            operations=[Double(), spelt.transforms.Batch(6)],
            worker_count=2,
        )
    )
    assert [b["id"].tolist() for b in got] == [(b["id"] * 2).tolist() for b in without]
    for a, b in zip(got, without):
        np.testing.assert_array_equal(a["image"], b["image"])
        assert a["name"].tolist() == b["name"].tolist()
    assert requests and all(r is not None and r[1:3] == (6, False) for r in requests)


def test_a_map_that_returns_none_batches_element_by_element_from_there(requests):
    ds = spelt.MapDataset.range(60).map(wp.none_at_sevens).to_iter_dataset().batch(5)
    expected = _steps(iter(ds))
    assert _steps(iter(ds.mp_prefetch(_TWO))) == expected
    assert requests[0] == (0, 5, False, None) and requests[-1] is None  # handed over


def test_a_filter_below_the_batch_batches_element_by_element(requests):
    ds = spelt.MapDataset.range(40).filter(lambda x: x % 3 > 0).map(wp.Scale(2))
    ds = ds.to_iter_dataset().batch(4)
    assert _steps(iter(ds.mp_prefetch(_TWO))) == _steps(iter(ds))
    assert requests and all(r is None for r in requests)


def test_an_error_in_a_batch_is_raised_at_its_element_with_its_state(requests):
    ds = spelt.MapDataset.range(40).map(wp.fail_at_23).to_iter_dataset().batch(4)
    expected = _steps(iter(ds))
    assert ("error: element 23", {"next_index": 20}) in expected
    assert _steps(iter(ds.mp_prefetch(_TWO))) == expected
    assert requests[0] is not None


@pytest.mark.parametrize("first_none", [20, 18])
def test_a_data_loader_map_that_returns_none_batches_as_without_workers(requests, first_none):
    def steps(workers):
        loader = spelt.DataLoader(
            data_source=list(range(30)),
            sampler=spelt.samplers.SequentialSampler(30),
            operations=[wp.NoneFrom(first_none), spelt.transforms.Batch(5)],
            worker_count=workers,
        )
        it, out = iter(loader), []
        while True:
            try:
                x = next(it)
            except StopIteration:
                return out
            out.append(repr(x))  # the states name the worker count

    expected = steps(0)
    # Batches of None elements (an object array of Nones; None under jax's tree semantics);
    # 18: a batch of 3 ints and 2 Nones, an object array.
    assert len(expected) == 6 and expected[-1] == expected[-2] != expected[0]
    assert ("None, None" in expected[3]) == (first_none == 18)
    assert steps(2) == expected
    assert requests[0] is not None and requests[0][3] is spelt.data_loader.NONE_ELEMENT


def test_batches_over_8_mib_are_batched_by_the_consumer(requests):
    ds = spelt.MapDataset.range(12).map(wp.big_array_mib).to_iter_dataset().batch(5)  # 10 MiB
    got = [b[:, 0, 0].tolist() for b in ds.mp_prefetch(_TWO)]
    assert got == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    assert requests[0] == (0, 5, False, None) and requests[-1] is None
