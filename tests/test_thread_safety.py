"""An engine iterator used from several threads: calls are serialised, never a crash or hang.

``iter(ds)`` of a Spelt pipeline may be shared by threads (Grain's PrefetchDatasetIterator
takes a lock in ``__next__`` too): ``next`` / ``get_state`` / ``set_state`` / ``close`` are
serialised, each element goes to exactly one thread, and a state is always taken between two
elements. Covered for pipelines that call Python (run holding the GIL) and for native ones
(run without it). Crashes are looked for in a subprocess, so a SIGSEGV fails one test.
"""

import collections
import json
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt

N = 20_000


def _add_one(x):
    return x + 1


def _native(n=N):
    return spelt.MapDataset.range(n).to_iter_dataset()


def _calls_python(n=N):
    return spelt.MapDataset.range(n).map(_add_one).to_iter_dataset()


def _loader(n=N):
    return spelt.DataLoader(
        data_source=spelt.MapDataset.range(n),
        sampler=spelt.samplers.SequentialSampler(n, spelt.sharding.NoSharding()),
    )


# name -> (build(n=N), element value of index i)
PIPELINES = {
    "native": (_native, lambda i: i),
    "calls Python": (_calls_python, lambda i: i + 1),
    "DataLoader": (_loader, lambda i: i),
}


def _in_threads(target, count):
    threads = [threading.Thread(target=target) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# The crash report: two threads each run `for _ in it: pass` over one iterator (before the fix:
# SIGSEGV in about half of the runs, or a hang). Many rounds in one subprocess with a timeout.
_REPRO = textwrap.dedent("""
    import collections, json, sys, threading
    import spelt

    def add_one(x):
      return x + 1

    rounds, n, calls_python = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    for _ in range(rounds):
      ds = spelt.MapDataset.range(n)
      if calls_python:
        ds = ds.map(add_one)
      it = iter(ds.to_iter_dataset())
      seen = []
      def run():
        local = [int(x) for x in it]
        seen.append(local)
      threads = [threading.Thread(target=run) for _ in range(2)]
      for t in threads: t.start()
      for t in threads: t.join()
      counts = collections.Counter(x for local in seen for x in local)
      # Each thread sees an increasing subsequence; together every element exactly once.
      assert all(local == sorted(local) for local in seen), "out of order"
      first = 1 if calls_python else 0
      assert sorted(counts) == list(range(first, n + first)), "lost elements"
      assert set(counts.values()) == {1}, "duplicated elements"
      assert it.get_state() == {"next_index": n}, it.get_state()
    print(json.dumps("ok"))
""")


@pytest.mark.parametrize("calls_python", [False, True])
def test_two_threads_share_an_iterator_in_a_subprocess(calls_python):
    rounds, n = (20, 100_000) if not calls_python else (5, 20_000)
    proc = subprocess.run(
        [sys.executable, "-c", _REPRO, str(rounds), str(n), "1" if calls_python else "0"],
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert json.loads(proc.stdout) == "ok"


@pytest.mark.parametrize("name", list(PIPELINES))
def test_each_element_once_across_four_threads(name):
    build, value = PIPELINES[name]
    it = iter(build())
    per_thread = []

    def run():
        per_thread.append([int(x) for x in it])

    _in_threads(run, 4)
    counts = collections.Counter(x for local in per_thread for x in local)
    assert sorted(counts) == [value(i) for i in range(N)]
    assert set(counts.values()) == {1}
    for local in per_thread:
        assert local == sorted(local)  # calls are serialised: each thread sees increasing values
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize("name", ["native", "calls Python"])
def test_get_state_from_another_thread_is_consistent(name):
    build, value = PIPELINES[name]
    it = iter(build())
    done = threading.Event()
    states = []

    def poll():
        while not done.is_set():
            states.append(it.get_state()["next_index"])
        states.append(it.get_state()["next_index"])

    poller = threading.Thread(target=poll)
    poller.start()
    consumed = [int(x) for x in it]
    done.set()
    poller.join()
    assert consumed == [value(i) for i in range(N)]
    assert len(states) > 1
    assert states == sorted(states) and 0 <= states[0] and states[-1] == N
    # Each state taken mid-stream is a position between two elements: it resumes exactly there.
    for position in sorted(set(states))[:: max(1, len(set(states)) // 5)]:
        resumed = iter(build())
        resumed.set_state({"next_index": position})
        assert [int(x) for x in resumed] == [value(i) for i in range(position, N)]


@pytest.mark.parametrize("name", ["native", "calls Python"])
def test_set_state_from_another_thread(name):
    """A rewind from another thread lands between two elements: the consumer sees runs of
    consecutive elements, each starting where a rewind put it, the last one ending at N."""
    build, value = PIPELINES[name]
    it = iter(build())
    rewinds = 5

    def rewind():
        for _ in range(rewinds):
            time.sleep(0.002)
            it.set_state({"next_index": 0})

    rewinder = threading.Thread(target=rewind)
    rewinder.start()
    consumed = []
    for x in it:
        consumed.append(int(x))
        if len(consumed) % 1000 == 0:
            time.sleep(0.001)  # let the rewinder in
    rewinder.join()
    consumed.extend(int(x) for x in it)  # a rewind after the end restarts the stream
    runs = [[consumed[0]]]
    for x in consumed[1:]:
        if x == runs[-1][-1] + 1:
            runs[-1].append(x)
        else:
            runs.append([x])
    assert all(run[0] == value(0) for run in runs), [run[0] for run in runs]
    assert runs[-1][-1] == value(N - 1)
    assert it.get_state() == {"next_index": N}


@pytest.mark.parametrize("name", ["native", "calls Python"])
def test_close_from_another_thread_during_iteration(name):
    build, value = PIPELINES[name]
    it = iter(build(10 * N))  # long enough to still run when close() comes
    consumed, errors = [], []

    def run():
        try:
            for x in it:
                consumed.append(int(x))
        except ValueError as e:  # closed under it
            errors.append(str(e))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    while len(consumed) < 100:
        time.sleep(0.001)
    it.close()
    for t in threads:
        t.join()
    assert errors and all("closed" in e for e in errors)
    # What was delivered before the close is a prefix of the stream, each element once.
    assert sorted(consumed) == [value(i) for i in range(len(consumed))]
    it.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        next(it)


def test_close_waits_for_a_next_in_progress():
    """close() from another thread while next() runs a slow Python map: next() completes with
    its element, close() returns after it, and later calls raise ValueError."""
    entered, release = threading.Event(), threading.Event()

    def slow(x):
        if x == 1:
            entered.set()
            release.wait(10)
        return x

    # Computed in the consumer's next() (no read-ahead threads).
    it = iter(spelt.MapDataset.range(5).map(slow).to_iter_dataset(spelt.ReadOptions(num_threads=0)))
    assert next(it) == 0
    results = []
    consumer = threading.Thread(target=lambda: results.append(next(it)))
    consumer.start()
    assert entered.wait(10)
    closer = threading.Thread(target=it.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # waits for the next() in progress, holding no GIL meanwhile
    release.set()
    consumer.join(10)
    closer.join(10)
    assert results == [1]
    with pytest.raises(ValueError, match="closed"):
        next(it)


def test_use_from_inside_its_own_pipeline_raises():
    """A callable that calls its own iterator gets RuntimeError rather than a deadlock."""
    holder = {}

    def peek(x):
        if x == 2:
            holder["it"].get_state()
        return x

    holder["it"] = it = iter(spelt.MapDataset.range(5).map(peek).to_iter_dataset())
    assert [next(it), next(it)] == [0, 1]
    with pytest.raises(RuntimeError, match="re-entrant"):
        next(it)


@pytest.mark.parametrize("where", ["source", "map"])
def test_python_code_that_waits_runs_on_the_read_threads(where):
    """Python sources and maps that wait (here: sleep) move to ReadOptions.num_threads threads,
    as in Grain, so that their waits overlap; the output keeps its order."""
    lock = threading.Lock()
    running = [0, 0]  # calls running now, most at once

    def wait(x):
        with lock:
            running[0] += 1
            running[1] = max(running)
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return x

    class Source:
        def __len__(self):
            return 60

        def __getitem__(self, i):
            return wait(i) if where == "source" else i

    ds = spelt.MapDataset.source(Source())
    if where == "map":
        ds = ds.map(wait)
    options = spelt.ReadOptions(num_threads=4, prefetch_buffer_size=40)
    assert list(ds.to_iter_dataset(options)) == list(range(60))
    assert running[1] >= 2


def test_python_code_that_computes_stays_on_the_consumer():
    """A Python map that holds the GIL is computed by the consumer (threads would only
    contend for the GIL)."""
    consumer = threading.get_ident()
    threads = set()

    def compute(x):
        threads.add(threading.get_ident())
        return sum(range(2000)) * 0 + x

    ds = spelt.MapDataset.range(300).map(compute).to_iter_dataset()
    assert list(ds) == list(range(300))
    assert threads == {consumer}
