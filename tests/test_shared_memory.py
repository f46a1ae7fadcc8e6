"""SharedMemoryArray / SharedMemoryArrayMetadata (grain.multiprocessing) and
SharedMemoryDataSource (grain.sources), against Grain 0.2.18 where their behaviour is the same,
and the guarantee Grain lacks: their memory never outlives the processes that hold it, even
after SIGKILL, and nothing ever appears in /dev/shm."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import textwrap

import grain
import numpy as np
import pytest
from grain._src.python.ipc import shared_memory_array as grain_shm

import spelt
import spelt.python
from pipelines import assert_same, timeout  # noqa: F401

SharedMemoryArray = spelt.multiprocessing.SharedMemoryArray
SharedMemoryArrayMetadata = spelt.multiprocessing.SharedMemoryArrayMetadata
shm = spelt.shared_memory


def _dev_shm():
    return set(os.listdir("/dev/shm"))


def test_array_basics_match_grain():
    for g in (grain, spelt):
        a = g.multiprocessing.SharedMemoryArray((2, 3), np.int32)
        assert a.shape == (2, 3) and a.dtype == np.int32
        assert not a.any()
        a[:] = np.arange(6).reshape(2, 3)
        assert type(a + 1) is np.ndarray  # numpy results are plain arrays, as in Grain
        assert type(a[0]) is g.multiprocessing.SharedMemoryArray
        m = a.metadata
        assert isinstance(m, g.multiprocessing.SharedMemoryArrayMetadata)
        assert (m.shape, m.dtype) == ((2, 3), np.dtype(np.int32))
        b = g.multiprocessing.SharedMemoryArray.from_metadata(m)
        b[1, 2] = 99  # the same memory
        assert a[1, 2] == 99
        assert pickle.loads(pickle.dumps(m)) == m
        del b
        m.close_and_unlink_shm()
        del a


def test_unlinked_segment_cannot_be_opened():
    a = SharedMemoryArray((4,), np.float32)
    m = a.metadata
    a.unlink_on_del()
    del a
    with pytest.raises(FileNotFoundError):
        SharedMemoryArray.from_metadata(m)
    with pytest.raises(FileNotFoundError):
        SharedMemoryArray.from_metadata(SharedMemoryArrayMetadata("psm_nothing", (1,), np.int8))


def test_copy_and_open_structures_match_grain():
    def struct():
        return {"a": np.arange(10, dtype=np.int32), "b": [np.ones((2, 2)), 7], "c": "text"}

    for module in (grain_shm, shm):
        copied = module.copy_to_shm(struct())
        assert isinstance(copied["a"], module.SharedMemoryArrayMetadata)
        assert copied["b"][1] == 7 and copied["c"] == "text"
        opened = module.open_from_shm(copied)
        assert type(opened["b"][0]) is module.SharedMemoryArray
        assert opened["a"]._unlink_on_del  # pylint: disable=protected-access
        np.testing.assert_equal(opened, struct())
        small = module.copy_to_shm(struct(), min_size=64)
        assert type(small["a"]) is np.ndarray  # 40 bytes: stays
        module.unlink_shm(small)
        del opened


def _read_in_child(metadata):
    a = SharedMemoryArray.from_metadata(metadata)
    seen = a.tolist()
    a[0] += 1000  # written through to the parent's memory
    return seen


def test_array_shared_with_another_process():
    a = SharedMemoryArray((3,), np.int64)
    a[:] = [1, 2, 3]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_read_in_child, (a.metadata,)) == [1, 2, 3]
        assert pool.apply(len, (a,)) == 3  # the array itself pickles as its metadata
    assert a.tolist() == [1001, 2, 3]
    a.unlink_on_del()


def test_segment_handed_over_is_released_by_its_creator():
    """Once another process opened a segment and the creator dropped its array, the creator
    keeps nothing: the memory belongs to the process that opened it."""
    a = SharedMemoryArray((3,), np.int64)
    a[:] = [4, 5, 6]
    m = a.metadata
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        del a  # not opened elsewhere yet: the name still opens
        assert SharedMemoryArray.from_metadata(m).tolist() == [4, 5, 6]
        assert pool.apply(_read_in_child, (m,)) == [4, 5, 6]
    SharedMemoryArray((1,), np.int8)  # the creator applies the marks at its next segment
    with pytest.raises(FileNotFoundError):
        SharedMemoryArray.from_metadata(m)


def _fill(i):
    out = SharedMemoryArray((3,), np.int64)
    out[:] = i
    return out


def _fill_metadata(i):
    return _fill(i).metadata


def test_arrays_from_worker_processes():
    """A SharedMemoryArray a worker returns reaches the consumer; so does its metadata, which
    the consumer opens while the worker runs (the worker keeps the segment until unlinked)."""
    options = spelt.MultiprocessingOptions(num_workers=2)
    ds = spelt.MapDataset.range(6).map(_fill).to_iter_dataset().mp_prefetch(options)
    assert [a.tolist() for a in ds] == [[i] * 3 for i in range(6)]
    ds = spelt.MapDataset.range(6).map(_fill_metadata).to_iter_dataset().mp_prefetch(options)
    it = iter(ds)
    for i in range(6):
        opened = shm.open_from_shm(next(it))  # unlinked when garbage-collected
        assert opened.tolist() == [i] * 3
    it.close()


_HOLDER = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    import spelt
    a = spelt.multiprocessing.SharedMemoryArray((1 << 20,), np.uint8)
    a[:] = 7
    source = spelt.sources.SharedMemoryDataSource(list(range(100)), name=f"held_{os.getpid()}")
    print(a.metadata.name, source.shm.name, flush=True)
    if sys.argv[1] == "sleep":
        time.sleep(600)
    """
)


def _shared_files(pid):
    """What process `pid` has open or mapped that is shared memory: (paths under /dev/shm,
    memfd names)."""
    targets = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    with open(f"/proc/{pid}/maps") as f:
        targets += [line.split(None, 5)[-1].strip() for line in f if len(line.split()) == 6]
    dev_shm = {t for t in targets if t.startswith("/dev/shm/")}
    memfds = {t.split()[0].removeprefix("/memfd:") for t in targets if t.startswith("/memfd:")}
    return dev_shm, memfds


@pytest.mark.parametrize("ending", ["sigkill", "exit"])
def test_memory_never_outlives_the_process(ending):
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, "sleep" if ending == "sigkill" else "exit"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    names = child.stdout.readline().split()
    assert len(names) == 2
    if ending == "sigkill":
        # While the holder lives, its segments are anonymous memfds (nothing under /dev/shm)
        # and open from here by name.
        dev_shm, memfds = _shared_files(child.pid)
        assert dev_shm == set()
        assert {n.rsplit("-", 1)[0] for n in names} <= memfds
        held = SharedMemoryArray.from_metadata(SharedMemoryArrayMetadata(names[0], (4,), np.uint8))
        assert held.tolist() == [7] * 4
        del held
        os.killpg(child.pid, signal.SIGKILL)  # the whole job, as a scheduler kills it
    child.wait(timeout=60)
    child.stdout.close()
    shm_files = " ".join(os.listdir("/dev/shm"))
    for name in names:
        assert name not in shm_files
        with pytest.raises(FileNotFoundError):
            shm.Segment.open(name)


def test_grain_leaks_where_spelt_does_not():
    """The difference, shown: Grain's segment of a job killed with SIGKILL (its whole process
    group, as a job scheduler does, so multiprocessing's resource tracker dies too) stays in
    /dev/shm."""
    code = textwrap.dedent(
        """
        import time, numpy as np
        from grain._src.python.ipc import shared_memory_array
        a = shared_memory_array.SharedMemoryArray((16,), np.uint8)
        print(a.metadata.name, flush=True)
        time.sleep(600)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    name = child.stdout.readline().strip().lstrip("/")
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    child.stdout.close()
    try:
        assert name in _dev_shm()
    finally:
        os.unlink(f"/dev/shm/{name}")


def _read_source(source, indices):
    return [source[i] for i in indices]


def _close_and_unlink(source):
    source.close()
    source.unlink()  # after close, in a process that did not make it (as Grain allows)


def test_data_source_unlinked_by_another_process():
    source = spelt.sources.SharedMemoryDataSource([1, 2, 3])
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pool.apply(_close_and_unlink, (source,))
    with pytest.raises(FileNotFoundError):
        spelt.sources.SharedMemoryDataSource(name=source.name)
    assert list(source) == [1, 2, 3]  # a mapping stays readable until it is closed
    source.close()


def test_data_source_matches_grain():
    values = [0, -3, 2.5, "text", b"bytes", None, True]
    # Names of this process only: a test run beside another one must not meet its segments.
    g_name, s_name = f"legacy8_g_{os.getpid()}", f"legacy8_s_{os.getpid()}"
    g_src = grain.sources.SharedMemoryDataSource(values, name=g_name)
    s_src = spelt.sources.SharedMemoryDataSource(values, name=s_name)
    try:
        assert len(s_src) == len(g_src)
        assert [s_src[i] for i in range(-7, 7)] == [g_src[i] for i in range(-7, 7)]
        assert list(s_src) == list(g_src)
        assert str(s_src) == str(g_src).replace(g_name, s_name)
        with pytest.raises(IndexError):
            s_src[7]  # pylint: disable=pointless-statement
        with pytest.raises(FileExistsError):
            spelt.sources.SharedMemoryDataSource([1], name=s_name)
        assert list(spelt.sources.SharedMemoryDataSource(name=s_name)) == values
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            read = pool.starmap(_read_source, [(s_src, [1, 3]), (s_src, [6, 0])])
        assert read == [[-3, "text"], [True, 0]]
        assert len(spelt.sources.SharedMemoryDataSource([])) == 0
    finally:
        g_src.close()
        g_src.unlink()
        s_src.close()
        s_src.unlink()
    with pytest.raises(FileNotFoundError):
        spelt.sources.SharedMemoryDataSource(name=s_name)


def test_data_source_in_data_loader_with_workers():
    source = spelt.python.InMemoryDataSource(list(range(30)))

    def loader(g, src, workers):
        return g.DataLoader(
            data_source=src,
            sampler=g.samplers.IndexSampler(30, shuffle=True, seed=3, num_epochs=1),
            operations=[g.transforms.Batch(4)],
            worker_count=workers,
            shard_options=g.sharding.NoSharding(),
        )

    expected = list(loader(grain, list(range(30)), 0))
    assert_same(list(loader(spelt, source, 0)), expected)
    assert_same(list(loader(spelt, source, 2)), expected)
    source.close()
    source.unlink()


@pytest.mark.parametrize("iter_ds", [False, True])
def test_batch_accepts_enable_shared_memory_output(iter_ds):
    # Grain's SupportsSharedMemoryOutput (its DataLoader calls it on a batch before its
    # workers); Spelt's worker batches always travel through shared memory, so the values are
    # those of a plain batch.
    outputs = []
    for g in (grain, spelt):
        ds = g.MapDataset.range(7)
        ds = (ds.to_iter_dataset() if iter_ds else ds).batch(3)
        ds.enable_shared_memory_output()
        outputs.append([np.asarray(b).tolist() for b in ds])
    assert outputs[0] == outputs[1] == [[0, 1, 2], [3, 4, 5], [6]]
