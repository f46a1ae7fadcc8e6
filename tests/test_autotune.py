"""Autotuned worker pools (mp_prefetch(..., autotune=True), DataLoader(autotune=True);
python/spelt/_workers/autotune.py): the policy on measured windows, and that changing the worker
count and buffers while running never changes the output or the states, restores included.
"""

import collections
import os
import time

import pipelines
import pytest
import spelt
import worker_pipelines as wp
from pipelines import timeout
from spelt import monitoring
from spelt._workers import autotune
from test_workers import _normalized, _restore_in_child, no_workers_left_behind


def _stage(ds):
    """The ProcessPrefetchIterDataset of a pipeline."""
    while not isinstance(ds, spelt.dataset.ProcessPrefetchIterDataset):
        (ds,) = ds.parents
    return ds


# ---------------------------------------------------------------------------------------------
# The policy, on a fake pool and clock.


class _FakePool:
    closed = False
    pids = ()

    def __init__(self, workers=2, capacity=2):
        self.num_workers = self.active_workers = workers
        self.capacity = capacity

    def all_ready(self):
        return True

    def add_worker(self):
        self.num_workers += 1
        self.active_workers = self.num_workers


class _Probe:
    def __init__(self, memory_mb):
        self.memory = memory_mb * 2**20
        self.cpu = self.queued = self.idle = 0.0

    def memory_bytes(self, pids):
        return self.memory

    def run_seconds(self, pids):
        return self.cpu, self.queued

    def idle_seconds(self):
        return self.idle


class _Run:
    """A Tuner over a _FakePool and _Probe; each window() feeds one window of 8 chunks."""

    def __init__(self, memory_mb=100, budget_mb=1000, max_workers=4, workers=2):
        self.now = 0.0
        self.probe = _Probe(memory_mb)
        self.pool = _FakePool(workers)
        limits = autotune.Limits(
            max_workers=max_workers, max_buffer_size=4, buffer_size=1, ram_budget_mb=budget_mb
        )
        self.history = collections.deque()
        self.tuner = autotune.Tuner(
            self.pool, limits, self.history, clock=lambda: self.now, probe=self.probe
        )
        self.tuner.observe(0, 0.0, 0.0, 0)  # a first chunk, the workers ready: windows begin

    def window(self, rate, wait_share, busy, queued=0.0, spare=1.0, on_cpu=None, nbytes=2**20):
        """One window of the tuner: 8 chunks, `rate` elements/s, the workers `busy`, waiting
        `queued` for a CPU and `on_cpu` on one (default: the rest of busy), `spare` CPUs idle;
        returns (workers, buffer)."""
        step = self.tuner.window_seconds / 7.9  # the 8th chunk ends the window
        active = self.pool.active_workers
        for _ in range(8):
            self.now += step
            self.probe.cpu += (busy - queued if on_cpu is None else on_cpu) * active * step
            self.probe.queued += queued * active * step
            self.probe.idle += spare * step
            self.tuner.observe(rate * step, wait_share * step, busy * active * step, nbytes)
        return self.pool.active_workers, self.pool.capacity - 1


def test_busy_workers_and_a_waiting_consumer_get_one_more_worker_kept_if_faster():
    run = _Run()
    assert run.window(1000, 0.5, 0.9) == (3, 1)  # a third worker (started)
    assert run.window(1400, 0.3, 0.9) == (3, 1)  # kept: 40% faster
    assert run.window(1400, 0.3, 0.9) == (4, 1)
    assert run.window(1410, 0.3, 0.9) == (3, 1)  # not 5% faster: parked again
    assert run.pool.num_workers == 4
    assert "undone" in run.history[-1].reason
    assert run.window(1400, 0.3, 0.9) == (3, 1)  # not tried again for a while


def test_workers_sleeping_on_io_grow_on_a_busy_machine():
    run = _Run()
    assert run.window(400, 0.9, 1.0, spare=0.0) == (2, 1)  # on a CPU all the time: no
    assert run.window(400, 0.9, 1.0, spare=0.0, on_cpu=0.05) == (4, 1)  # doubled
    assert run.window(410, 0.9, 1.0, spare=0.0, on_cpu=0.05) == (2, 1)  # not faster: undone
    assert run.pool.num_workers == 4


def test_no_move_without_idle_cpus_or_when_starved():
    run = _Run(workers=3)
    assert run.window(1000, 0.5, 0.9, spare=0.1) == (3, 1)  # no idle CPU: nothing to gain
    assert run.window(1000, 0.5, 0.9, queued=0.05, spare=0.0) == (3, 1)
    assert run.window(1000, 0.0, 0.3, queued=0.2, spare=0.0) == (3, 1)  # starved: no parking
    assert run.window(1000, 0.5, 0.9, queued=0.3, spare=0.0) == (3, 2)  # but deeper buffers
    assert run.window(1000, 0.5, 0.9, queued=0.3, spare=0.0) == (3, 1)  # not faster: undone
    run = _Run(workers=3)
    assert run.window(1000, 0.5, 0.4, spare=0.0) == (3, 2)  # idle, with a CPU: buffer


def test_idle_workers_with_a_waiting_consumer_get_a_deeper_buffer():
    run = _Run()
    assert run.window(1000, 0.5, 0.4) == (2, 2)
    assert run.window(900, 0.5, 0.4) == (2, 1)  # slower: undone


def test_idle_workers_and_a_consumer_that_never_waits_lose_a_worker():
    run = _Run(workers=3)
    assert run.window(1000, 0.0, 0.3) == (2, 1)
    assert run.window(980, 0.0, 0.45) == (2, 1)  # kept: not 5% slower
    assert run.pool.num_workers == 3  # parked, not stopped


def test_growth_stays_within_the_ram_budget_and_shrinks_when_over():
    run = _Run(memory_mb=150, budget_mb=200)  # 75 MiB per worker: a third does not fit
    assert run.window(1000, 0.5, 0.9) == (2, 1)
    assert run.window(1000, 0.5, 0.4) == (2, 2)  # a buffer (2 x 1 MiB) fits
    assert run.window(1200, 0.5, 0.4) == (2, 2)  # kept
    run.probe.memory = 250 * 2**20
    assert run.window(1200, 0.5, 0.9) == (2, 1)  # over: one chunk less per worker
    assert run.window(1200, 0.5, 0.9) == (2, 0)
    assert run.window(1200, 0.5, 0.9) == (1, 0)  # then a worker parked
    assert monitoring._autotune_parameters.Get(autotune.NODE_NAME, "num_workers") == 1
    assert run.tuner.peak_memory_bytes == 250 * 2**20


def test_a_new_pool_starts_as_many_workers_as_cpus_and_budget_allow(monkeypatch):
    monkeypatch.setattr(autotune.pool_lib, "usable_cpus", lambda: 4)
    # The first worker measures 40 MiB; with 1 KiB elements a chunk counts CHUNK_BYTES (8 MiB),
    # 2 x (1 + 1) of them: 72 MiB a worker.
    for budget_mb, max_workers, want in ((1000, 8, 4), (1000, 3, 3), (220, 8, 3), (100, 8, 1)):
        run = _Run(memory_mb=40, budget_mb=budget_mb, max_workers=max_workers, workers=1)
        run.pool.capacity = 1
        run.tuner = autotune.Tuner(
            run.pool, run.tuner._limits, run.history, lambda: run.now, run.probe, size=True
        )
        run.tuner.observe(1, 0.0, 0.001, 1024)
        assert run.pool.num_workers == want, (budget_mb, max_workers)
        run.tuner.observe(1, 0.0, 0.001, 1024)
        assert run.pool.num_workers == want  # only at the first chunk
    # 10 MiB elements: a chunk counts one element, 2 x 2 of them: 80 MiB a worker.
    run = _Run(memory_mb=40, budget_mb=200, max_workers=8, workers=1)
    run.tuner = autotune.Tuner(
        run.pool, run.tuner._limits, run.history, lambda: run.now, run.probe, size=True
    )
    run.tuner.observe(1, 0.0, 0.001, 10 * 2**20)
    assert run.pool.num_workers == 2


def test_windows_start_short_and_grow():
    run = _Run()
    lengths = []
    for _ in range(5):
        lengths.append(run.tuner.window_seconds)
        run.window(1000, 0.0, 0.6)  # no move
    assert lengths == [0.1, 0.2, 0.4, 0.5, 0.5]


def test_idle_cpus_give_bigger_steps_and_buffers_double():
    run = _Run(workers=1, max_workers=8, budget_mb=10_000)
    assert run.window(1000, 0.5, 0.9, spare=3.0) == (4, 1)  # 3 idle CPUs: 3 more workers
    assert run.window(3000, 0.3, 0.9, spare=0.1) == (4, 1)  # kept
    assert run.window(3000, 0.3, 0.4) == (4, 2)
    assert run.window(3300, 0.3, 0.4) == (4, 2)  # kept
    assert run.window(3300, 0.3, 0.4) == (4, 4)  # doubled
    assert run.window(3600, 0.3, 0.4) == (4, 4)
    assert run.window(3600, 0.3, 0.4) == (4, 4)  # at most 4 more: the largest buffer is 4


def test_waits_for_a_cpu_with_idle_cpus_are_no_starvation():
    run = _Run()  # a run queue wait while CPUs are idle is wake-up latency, not other jobs
    assert run.window(1000, 0.5, 0.3, queued=0.2, spare=0.8) == (2, 2)


def test_pool_capacity_counts_replies_not_taken():
    """The tuner bounds a worker's memory by its capacity: requests outstanding plus replies
    received but not taken (the engine may submit many more chunks)."""
    ds = spelt.MapDataset.range(20).map(wp.record)
    keeper = autotune.keeper_lib.PoolKeeper(ds, None, 1, capacity=2, anchor=ds)
    lease = keeper.acquire()
    pool = lease.pool
    try:
        tickets = [lease.submit(i, 1) for i in range(6)]
        deadline = time.monotonic() + 60
        while pool._held[0] < 2 and time.monotonic() < deadline:  # the worker answers both
            pool._receive_ready(timeout=0.1)
            pool._dispatch()
        assert (pool._held[0], len(pool._sent[0]), len(pool._queue)) == (2, 0, 4)
        for ticket in tickets:  # each taken frees room for the next
            elements, error, _, _ = ticket.take()
            assert len(elements) == 1 and error is None
        assert (pool._held[0], len(pool._sent[0]), len(pool._queue)) == (0, 0, 0)
    finally:
        lease.close()


def test_limits_start_within_cpus_and_budget():
    options, limits = autotune.configure(spelt.MultiprocessingOptions(num_workers=8), 100)
    assert options.num_workers == 8 and limits.max_workers == 8
    _, limits = autotune.configure(None, None)
    assert limits.max_workers == len(os.sched_getaffinity(0))
    assert limits.ram_budget_mb > 0 and (limits.buffer_size, limits.max_buffer_size) == (1, 8)
    with pytest.raises(ValueError, match="ram_budget_mb"):
        autotune.configure(None, 0)
    with pytest.raises(ValueError, match="Ray"):
        spelt.MapDataset.range(3).to_iter_dataset().mp_prefetch(
            spelt.experimental.RayOptions(), autotune=True
        )


# ---------------------------------------------------------------------------------------------
# Real pools: changes while running keep the output and the states.

_SCRIPT = [
    ("buffer", 3),
    ("workers", 1),
    ("buffer", 1),
    ("workers", 2),
    ("buffer", 2),
    ("workers", 3),  # a new process: the next changes wait until it has started
]


def _scripted_step(self, measures):
    """A policy that changes the settings at every window (the real one, made predictable)."""
    del measures
    move, value = _SCRIPT[sum(d.reason == "scripted" for d in self._history) % len(_SCRIPT)]
    self._set(move, value, "scripted")


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setattr(autotune, "WINDOW_SECONDS", 0.0)
    monkeypatch.setattr(autotune, "MIN_CHUNKS", 1)
    monkeypatch.setattr(autotune.Tuner, "_step", _scripted_step)


def test_changes_while_running_keep_output_states_and_restores(scripted):
    slow = {"slow_records": True}
    want, want_states = pipelines.run_with_states(iter(wp.pipeline("all", 0, **slow)), None)
    ds = wp.pipeline("all", 3, autotune=True, **slow)
    it = iter(ds)
    got, states = pipelines.run_with_states(it, None)
    assert states == want_states
    assert _normalized(got) == _normalized(want)
    history = list(_stage(ds)._keeper.history)
    settings = {(d.workers, d.buffer_size) for d in history if d.reason == "scripted"}
    assert len(settings) >= 4, history  # it changed while running: grew, parked, un-parked
    for k in (0, 7, len(want) // 2):  # restored on the same iterator, while it adapts
        it.set_state(want_states[k])
        assert _normalized(list(it)) == _normalized(want[k:]), f"restored at {k}"
    # States taken mid-adaptation restore in a new process: autotuned, 0 and 2 workers.
    ks = [1, 5, len(want) // 3, len(want) - 1]
    requests = [
        {
            "kind": "pipeline",
            "name": "all",
            "workers": workers,
            "states": [[k, states[k]] for k in ks],
            "limit": len(want),
            "kwargs": {**slow, **tuned},
        }
        for workers, tuned in ((3, {"autotune": True}), (0, {}), (2, {}))
    ]
    expected = [[[k, _normalized(want[k:])] for k in ks]] * 3
    assert _restore_in_child(requests) == expected


def test_loader_and_real_policy_keep_output(monkeypatch):
    monkeypatch.setattr(autotune, "WINDOW_SECONDS", 0.01)
    monkeypatch.setattr(autotune, "MIN_CHUNKS", 1)
    want = list(wp.loader(0))
    loader = wp.loader(3, autotune=True, ram_budget_mb=512)
    it = iter(loader)
    got, states = pipelines.run_with_states(it, None)
    pipelines.assert_same(got, want)
    history = _stage(loader._dataset)._keeper.history
    assert history[0].reason == "started" and history[0].workers == 1
    assert all(1 <= d.workers <= 3 and 0 <= d.buffer_size <= 8 for d in history)
    for restored in (iter(loader), iter(wp.loader(0))):  # Grain's layout, any worker count
        restored.set_state(states[9])
        pipelines.assert_same(list(restored), want[9:])


def test_a_small_budget_starts_one_worker_and_never_grows(monkeypatch):
    monkeypatch.setattr(autotune, "WINDOW_SECONDS", 0.01)
    monkeypatch.setattr(autotune, "MIN_CHUNKS", 1)
    ds = wp.pipeline("all", 4, length=2000, autotune=True, ram_budget_mb=70)
    assert len(list(ds)) > 100
    history = _stage(ds)._keeper.history
    assert {d.workers for d in history} == {1}
    assert len(wp.children(os.getpid())) == 1
