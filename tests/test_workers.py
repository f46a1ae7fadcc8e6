"""Worker processes (mp_prefetch, DataLoader(worker_count=N)): same output and state as
0 workers, restore across worker counts, warm reuse across iterators, failures that never hang
or leak.

Worker processes take a fraction of a second to start, so tests reuse pipelines and keep
datasets small. Pipelines live in worker_pipelines.py (workers import it by reference). After
every test, once its objects are garbage, no worker process may remain.
"""

import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import pipelines
from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
from spelt import _core
from spelt._workers import arena
from spelt._workers import keeper
import worker_pipelines as wp

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
WORKER_COUNTS = [1, 2, 3, 5]


def _two_workers(n, fn):
    """range(n).map(fn) read by 2 worker processes."""
    return (
        spelt.MapDataset.range(n)
        .map(fn)
        .to_iter_dataset()
        .mp_prefetch(spelt.MultiprocessingOptions(num_workers=2))
    )


def _normalized(elements):
    return json.loads(json.dumps([pipelines.describe(x) for x in elements], default=repr))


def _no_children_within(seconds):
    deadline = time.monotonic() + seconds
    while wp.children(os.getpid()):
        assert time.monotonic() < deadline, f"worker processes remain: {wp.children(os.getpid())}"
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def no_workers_left_behind():
    yield
    gc.collect()  # datasets kept alive by reference cycles (e.g. a traceback) keep idle pools
    try:
        _no_children_within(2)
    finally:  # what a test leaves running fails that test, not every test after it
        for pid in wp.children(os.getpid()):
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def _arena_mappings():
    """Lines of /proc/self/maps that map a worker's arena."""
    with open("/proc/self/maps") as f:
        return [line for line in f if "spelt-arena" in line]


def _in_arena(array):
    """True if the bytes of `array` lie in a worker's arena mapped here (zero-copy)."""
    start = array.__array_interface__["data"][0]
    for line in _arena_mappings():
        low, high = (int(x, 16) for x in line.split()[0].split("-"))
        if low <= start and start + array.nbytes <= high:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Output and state do not depend on the worker count.


@pytest.fixture(scope="module")
def reference():
    """name -> (outputs, states) of each pipeline with 0 workers."""
    return {
        name: pipelines.run_with_states(iter(wp.pipeline(name, 0)), None) for name in wp.FILTERS
    }


@pytest.mark.parametrize("name", list(wp.FILTERS))
def test_output_and_states_equal_zero_workers(name, reference):
    want_outputs, want_states = reference[name]
    assert want_outputs
    for n in WORKER_COUNTS:
        it = iter(wp.pipeline(name, n))
        outputs, states = pipelines.run_with_states(it, None)
        assert states == want_states, f"{n} workers"
        assert _normalized(outputs) == _normalized(want_outputs), f"{n} workers"
    _no_children_within(2)


def test_loader_output_equals_zero_workers():
    want = list(wp.loader(0))
    for n in (2, 3):
        pipelines.assert_same(list(wp.loader(n)), want)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_filter_and_batch_on_top_equal_zero_workers(workers):
    want, want_states = pipelines.run_with_states(iter(wp.filtered_batches(0)), None)
    assert len(want) > 10
    it = iter(wp.filtered_batches(workers))
    got, states = pipelines.run_with_states(it, None)
    assert states == want_states
    assert _normalized(got) == _normalized(want)
    for k in (len(want), 0, 5, len(want) // 2):  # restored on the same iterator, both ways
        it.set_state(want_states[k])
        assert _normalized(list(it)) == _normalized(want[k:]), f"restored at {k}"


def _shape(state):
    """The state with every number replaced by 0."""
    if isinstance(state, dict):
        return {k: _shape(v) for k, v in state.items()}
    return 0 if isinstance(state, int) else state


def test_state_size_does_not_grow():
    it = iter(wp.pipeline("all", 2, length=2000))
    first = it.get_state()
    for _ in range(150):
        next(it)
    assert _shape(it.get_state()) == _shape(first)
    assert "next_index" in json.dumps(first)
    it.close()


def test_random_map_after_mp_prefetch_keeps_default_seed():
    ds = spelt.MapDataset.range(30).seed(3).map(abs).to_iter_dataset()
    parallel = ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=2))
    assert list(parallel.random_map(wp.add_noise)) == list(ds.random_map(wp.add_noise))


# ---------------------------------------------------------------------------------------------
# Checkpoints: taken with N workers, restored with M in a new process.


def _restore_in_child(requests):
    code = (
        f"import sys; sys.path.insert(0, {TESTS_DIR!r}); import worker_pipelines;"
        " worker_pipelines.restore_main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_checkpoint_restores_with_other_worker_counts_in_new_process(reference):
    outputs, _ = reference["two_of_three"]
    requests, expected = [], []
    for saved_with, restored_with in ((2, 3), (3, 1)):
        it = iter(wp.pipeline("two_of_three", saved_with))
        ks = [0, 1, 4, len(outputs) // 2, len(outputs)]
        got, states = pipelines.run_with_states(it, None)
        assert _normalized(got) == _normalized(outputs)
        requests.append(
            {
                "kind": "pipeline",
                "name": "two_of_three",
                "workers": restored_with,
                "states": [[k, states[k]] for k in ks],
                "limit": len(outputs),
            }
        )
        expected.append([[k, _normalized(outputs[k:])] for k in ks])
    loader_outputs = list(wp.loader(0))
    it = iter(wp.loader(3))
    ks = [0, 2, 9, len(loader_outputs)]
    got, states = pipelines.run_with_states(it, None)
    pipelines.assert_same(got, loader_outputs)
    requests.append(
        {
            "kind": "loader",
            "name": "",
            "workers": 2,
            "states": [[k, states[k].decode()] for k in ks],
            "limit": len(loader_outputs),
        }
    )
    expected.append([[k, _normalized(loader_outputs[k:])] for k in ks])
    assert _restore_in_child(requests) == expected


def test_set_state_on_one_iterator_moves_both_ways(reference):
    outputs, states = reference["one_in_ten"]
    it = iter(wp.pipeline("one_in_ten", 2))
    for k in (len(outputs) - 1, 0, 3, len(outputs), 1):
        it.set_state(states[k])
        assert it.get_state() == states[k]
        assert _normalized(list(it)) == _normalized(outputs[k:]), f"restored at {k}"
    with pytest.raises(ValueError, match="next_index"):
        it.set_state({"next_index": -1})
    it.close()


# ---------------------------------------------------------------------------------------------
# Workers: worker_init_fn, threads for native pipelines, zero-copy arenas.


def test_worker_init_fn_gets_index_and_count(tmp_path):
    ds = (
        spelt.MapDataset.range(20)
        .map(abs)
        .to_iter_dataset()
        .mp_prefetch(
            spelt.MultiprocessingOptions(num_workers=3),
            worker_init_fn=wp.write_init_marker(tmp_path),
        )
    )
    assert list(ds) == list(range(20))
    # The first worker ready may compute everything; the others start all the same (the pool
    # stays up while ds lives) and run worker_init_fn.
    markers = [tmp_path / f"init-{i}" for i in range(3)]
    deadline = time.monotonic() + 10
    while not all(m.exists() for m in markers):
        assert time.monotonic() < deadline, "worker_init_fn did not run in every worker"
        time.sleep(0.02)
    calls = sorted(json.loads(m.read_text()) for m in markers)
    assert [c[:2] for c in calls] == [[0, 3], [1, 3], [2, 3]]
    assert len({c[2] for c in calls} | {os.getpid()}) == 4  # three distinct worker processes


def test_native_pipeline_uses_threads_not_processes():
    ds = spelt.MapDataset.range(1000).seed(1).shuffle().to_iter_dataset().batch(10)
    parallel = ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=4))
    it = iter(parallel)
    first = next(it)
    assert not wp.children(os.getpid())
    pipelines.assert_same([first, *it], list(ds))


def test_later_iterators_reuse_the_warm_workers():
    ds = wp.pipeline("all", 2)
    first = list(ds)
    workers = sorted(wp.children(os.getpid()))
    assert len(workers) == 2  # kept, idle, after the first iterator ended
    it = iter(ds)
    start = it.get_state()
    assert _normalized(list(it)) == _normalized(first)
    it.set_state(start)  # after the end: the pool is leased again
    assert _normalized(list(it)) == _normalized(first)
    assert sorted(wp.children(os.getpid())) == workers
    loader = wp.loader(2)
    first_epoch = list(loader)
    loader_workers = set(wp.children(os.getpid())) - set(workers)
    assert len(loader_workers) == 2
    pipelines.assert_same(list(loader), first_epoch)  # the next epoch, on the same workers
    assert set(wp.children(os.getpid())) - set(workers) == loader_workers


def test_workers_are_not_reused_for_a_changed_pipeline():
    scale = wp.Scale(2)
    ds = _two_workers(10, scale)
    assert list(ds) == [2 * i for i in range(10)]
    workers = set(wp.children(os.getpid()))
    scale.factor = 3
    assert list(ds) == [3 * i for i in range(10)]
    assert not workers & set(wp.children(os.getpid()))


def test_idle_workers_stop_after_idle_seconds(monkeypatch):
    monkeypatch.setattr(keeper, "IDLE_SECONDS", 0.2)
    ds = wp.pipeline("all", 2)
    assert list(ds)
    _no_children_within(2)  # while ds lives


def test_close_leaves_no_processes_fds_or_mappings():
    gc.collect()
    fds = set(os.listdir("/proc/self/fd"))
    for _ in range(2):
        ds = _two_workers(100, wp.big_array)
        it = iter(ds)
        x = next(it)
        assert _in_arena(x)
        it.close()
        del it, ds, x
        _no_children_within(2)
    gc.collect()
    assert set(os.listdir("/proc/self/fd")) == fds
    assert not _arena_mappings()


def test_numpy_leaves_are_views_into_the_arena_and_slots_are_reused():
    # 2,000 arrays of 256 KiB (500 MiB) through 256 MiB arenas: only reuse keeps every one of
    # them zero-copy, and the shared memory in use stays small.
    ds = _two_workers(2000, wp.big_array)
    for i, x in enumerate(ds):
        assert x[0, 0] == i
        assert _in_arena(x), f"element {i} was copied"
        assert x.flags.writeable
    with open("/proc/self/status") as f:
        shmem_kib = next(int(line.split()[1]) for line in f if line.startswith("RssShmem:"))
    assert shmem_kib < 128 << 10


def test_region_allocator_reuses_and_merges_free_space():
    fd = arena.create_memfd("test-arena", 1024)
    allocator = _core.Arena(fd, 1024)
    os.close(fd)
    a, b, c = (allocator.allocate(256) for _ in range(3))
    assert (a, b, c) == (0, 256, 512)
    assert allocator.allocate(512) is None
    allocator.free([b])
    assert allocator.allocate(128) == 256  # lowest hole first
    allocator.free([256])
    allocator.free([a])
    allocator.free([c])  # merges with both neighbours: one hole again
    assert allocator.allocate(1024) == 0
    with pytest.raises(ValueError, match="no region at offset 8"):
        allocator.free([8])


def test_a_corrupt_record_is_refused_with_what_is_wrong():
    fd = arena.create_memfd("test-arena", 4096)
    shared = _core.Arena(fd, 4096)
    os.close(fd)
    writer = shared.writer()
    assert writer.add([np.arange(8), "x"], print) == (2, None)  # both native: not pickled
    record, _ = writer.finish()
    with pytest.raises(ValueError, match="already finished"):
        writer.finish()
    assert len(shared.unpack(record)) == 2
    with pytest.raises(ValueError, match="truncated record"):
        shared.unpack(record[:20])
    words = np.frombuffer(record, np.int64).copy()
    words[7] = 1 << 20  # the first element's first span: its offset, beyond the arena
    with pytest.raises(IndexError, match=r"span \[1048576, \+64\) outside the 4096-byte arena"):
        shared.unpack(words.tobytes())


def test_a_chunk_stored_from_engine_values_is_the_chunk_stored_from_python_objects():
    """compute_chunk_into encodes each element from the engine value (no Python objects where
    it has a tagged form) into exactly the record that storing its Python object writes."""
    from spelt._workers import protocol  # pylint: disable=import-outside-toplevel

    ds = spelt.MapDataset.range(24).map(wp.mixed).filter(lambda x: not isinstance(x, str))
    records = []
    for direct in (False, True):
        fd = arena.create_memfd("test-arena", 1 << 22)
        shared = _core.Arena(fd, 1 << 22)
        os.close(fd)
        writer = shared.writer()
        if direct:
            assert ds.engine_node.compute_chunk_into(writer, 0, 24, protocol.pickle_element) == (
                24,
                None,
                False,
            )
        else:
            values, error = ds.engine_node.compute_chunk(0, 24)
            assert error is None and writer.add(values, protocol.pickle_element) == (24, None)
        record, nbytes = writer.finish()
        assert len(shared.unpack(record)) == 24
        records.append((record, nbytes))
    # The same tag streams, pickles, spans and arena offsets (elements of every kind: native,
    # numpy scalars, pickled ones, filtered ones; end to end in the test below).
    assert records[0] == records[1]


def _assert_identical(got, want, where):
    """Same types (all the way down), values, dtypes, shapes and memory order."""
    assert type(got) is type(want), f"{where}: {type(got)} != {type(want)}"
    if isinstance(want, np.ndarray):
        assert (got.dtype, got.shape, got.flags.f_contiguous) == (
            want.dtype,
            want.shape,
            want.flags.f_contiguous,
        ), where
        assert np.array_equal(got, want) and got.flags.writeable, where
    elif isinstance(want, dict):
        assert list(got) == list(want), where
        for key in want:
            _assert_identical(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            _assert_identical(g, w, f"{where}[{k}]")
    else:
        assert got == want, where


def test_elements_keep_their_types_and_arrays_stay_in_the_arena():
    ds = _two_workers(32, wp.mixed)
    got = list(ds)
    assert len(got) == 32
    for i, element in enumerate(got):
        _assert_identical(element, wp.mixed(i), f"element {i}")
    for i in range(0, 32, 8):  # large arrays, native and pickled, are zero-copy
        assert _in_arena(got[i + 1]["big"]) and _in_arena(got[i + 2].x)
        assert _in_arena(got[i + 3]) and _in_arena(got[i + 4]["x"])


def test_elements_larger_than_the_arena_travel_in_band(monkeypatch):
    monkeypatch.setattr(arena, "ARENA_BYTES", 1 << 20)
    ds = _two_workers(6, wp.big_array_mib)
    got = list(ds)
    assert [x[0, 0] for x in got] == list(range(6))
    assert not any(_in_arena(x) for x in got) and all(x.flags.writeable for x in got)


# ---------------------------------------------------------------------------------------------
# Failures.


def test_exception_in_worker_keeps_type_and_traceback():
    ds = _two_workers(12, wp.explode)
    it = iter(ds)
    got = []
    with pytest.raises(wp.TransformError, match="cannot handle 7") as info:
        for x in it:
            got.append(x)
    assert got == list(range(7))
    remote = info.value.__cause__
    assert "in explode" in str(remote) and "TransformError: cannot handle 7" in str(remote)
    assert any("worker process" in note and "element 7" in note for note in info.value.__notes__)
    assert list(it) == list(range(8, 12))  # continues after the failing element
    assert it.get_state() == {"next_index": 12}


def test_failing_worker_init_fn_is_raised():
    ds = (
        spelt.MapDataset.range(5)
        .map(abs)
        .to_iter_dataset()
        .mp_prefetch(spelt.MultiprocessingOptions(num_workers=2), worker_init_fn=wp.failing_init)
    )
    it = iter(ds)
    with pytest.raises(wp.TransformError, match="no accelerator for worker") as info:
        next(it)
    assert "starting worker process" in " ".join(info.value.__notes__)
    _no_children_within(2)


def test_unpicklable_element_is_raised_at_its_index():
    ds = _two_workers(6, wp.lock_at_three)
    it = iter(ds)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(TypeError, match="pickle") as info:
        next(it)
    assert "element 3 cannot be pickled" in " ".join(info.value.__notes__)
    assert list(it) == [4, 5]


def test_unpicklable_pipeline_names_the_object():
    class Locked:
        def __init__(self):
            self.lock = threading.Lock()

        def __call__(self, x):
            return x

    ds = _two_workers(5, Locked())
    with pytest.raises(TypeError, match="lock") as info:
        iter(ds)
    note = " ".join(info.value.__notes__)
    assert "MapMapDataset.args[0].lock" in note and "cannot be pickled" in note
    assert not wp.children(os.getpid())


def test_killed_worker_is_reported_within_two_seconds():
    ds = (
        spelt.MapDataset.range(100_000)
        .map(wp.slow)
        .to_iter_dataset()
        .batch(4)
        .mp_prefetch(spelt.MultiprocessingOptions(num_workers=2))
    )
    it = iter(ds)
    next(it)
    workers = wp.children(os.getpid())
    assert len(workers) == 2
    os.kill(workers[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker process \d of 2 .* killed by signal SIGKILL"):
        for _ in it:
            pass
    assert time.monotonic() - start < 2
    state = it.get_state()
    assert next(it)[0] == state["next_index"]  # new workers continue where it stopped
    it.close()
    del ds  # an idle pool lives as long as its dataset (or keeper.IDLE_SECONDS)
    _no_children_within(2)


@pytest.mark.parametrize("how", ["close", "gc", "close_chained"])
def test_close_and_gc_stop_workers(how):
    ds = spelt.MapDataset.range(10_000).map(wp.big_array).to_iter_dataset()
    if how == "close_chained":
        ds = ds.batch(2)
    it = iter(ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=2)))
    next(it)
    assert len(wp.children(os.getpid())) == 2
    if how == "gc":
        del it
        gc.collect()
    else:
        it.close()
        with pytest.raises(ValueError, match="closed"):
            next(it)
    _no_children_within(2)


_CONSUMER = """
import json, os, signal, sys
# Python leaves SIGINT ignored where it started so (a shell's background job, `cmd &`): Ctrl-C's
# KeyboardInterrupt is what this consumer must show, whoever started the tests.
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {tests!r})
import spelt, worker_pipelines as wp
ds = spelt.MapDataset.range(10**6).map(wp.big_array).to_iter_dataset().batch(2).mp_prefetch(
    spelt.MultiprocessingOptions(num_workers=2))
it = iter(ds)
next(it)
print(json.dumps(wp.children(os.getpid())), flush=True)
if sys.argv[1] == "exit":
  sys.exit(0)
for _ in it:
  pass
"""


@pytest.mark.parametrize("how", ["sigint", "exit", "sigkill"])
def test_consumer_end_stops_workers(how):
    """Ctrl-C, interpreter exit and SIGKILL of the consumer: its workers are gone within 2 s.
    Nothing can be left in /dev/shm: no process of the pipeline maps a file there (the arenas
    are anonymous memfds). (Listing /dev/shm before and after would also see other programs'
    segments.)"""
    proc = subprocess.Popen(
        [sys.executable, "-c", _CONSUMER.format(tests=TESTS_DIR), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        workers = json.loads(proc.stdout.readline())
        assert len(workers) == 2
        for pid in [proc.pid, *workers]:
            try:
                with open(f"/proc/{pid}/maps") as maps:
                    assert "/dev/shm/" not in maps.read(), f"process {pid} maps a /dev/shm file"
            except FileNotFoundError:  # the consumer of "exit" may be gone already
                pass
        if how != "exit":
            time.sleep(0.2)
            proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        start = time.monotonic()
        try:
            _, stderr = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(
                f"the consumer still ran 10 s after {how}; its stderr:\n{proc.communicate()[1]}"
            )
        if how == "sigint":
            assert "KeyboardInterrupt" in stderr
        while any(wp.is_running(pid) for pid in workers):
            assert time.monotonic() - start < 2, f"workers still running after {how}"
            time.sleep(0.02)
    finally:  # a consumer left running fails this test only (its workers exit with it)
        proc.kill()
        proc.communicate()


def _killed_at_700(x):
    if x == 700:
        os.kill(os.getpid(), signal.SIGKILL)  # only ever runs in a worker
    return x


def test_elements_before_a_worker_crash_are_delivered():
    """A worker that dies on element 700 every time. The death is reported when the consumer
    notices it, maybe while waiting for an earlier chunk, with the position kept; next()
    then recomputes what was in flight one element at a time, so retrying delivers every
    element before 700 once (Grain's workers hand them out one by one), and from then on
    every retry reports the crash at 700."""
    ds = spelt.MapDataset.range(1000).map(_killed_at_700).to_iter_dataset()
    it = iter(ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=2)))
    got, error_states = [], []
    while len(error_states) < 2 or error_states[-1] != error_states[-2]:
        try:
            got.append(next(it))
        except RuntimeError as e:
            assert "killed by signal SIGKILL" in str(e)
            error_states.append(it.get_state())
    assert got == list(range(700))
    assert error_states[-1] == {"next_index": 700}
    it.set_state({"next_index": 701})  # past the bad element
    assert list(it) == list(range(701, 1000))
    it.close()


def _exit_123(x):
    if x == 3:
        sys.exit(123)
    return x


def test_sys_exit_in_a_worker_ends_that_worker_not_the_consumer():
    """As in Grain: a transform that calls sys.exit() ends its worker process, and the consumer
    raises a RuntimeError naming the exit code (not SystemExit, which would end the program)."""
    ds = _two_workers(8, _exit_123)
    with pytest.raises(RuntimeError, match="terminated unexpectedly with exit code 123"):
        list(ds)
