"""ThreadPrefetchIterDataset against PyPI Grain, and device_put with the real jax on CPU.

jax runs in subprocesses (tests/jax_steps.py; conftest.py hides it from this process): one
with 8 virtual CPU devices (sharded batches, exact restores, a jitted training step), and two
joined by ``jax.distributed`` on localhost, each reading its ``ShardByJaxProcess`` shard.
"""

import json
import os
import pathlib
import socket
import subprocess
import sys

import grain
import numpy as np
import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt

STEPS = pathlib.Path(__file__).with_name("jax_steps.py")


def _prefetched(g, buffer_size):
    ds = g.MapDataset.range(30).seed(4).shuffle().map(lambda x: x * 2).to_iter_dataset()
    ds = ds.filter(lambda x: x % 3 != 0).batch(2)
    return g.experimental.ThreadPrefetchIterDataset(ds, prefetch_buffer_size=buffer_size)


def _read_with_states(it):
    out = []
    for element in it:
        out.append((np.asarray(element).tolist(), it.get_state()))
    return out


@pytest.mark.parametrize("buffer_size", [0, 1, 3])
def test_thread_prefetch_matches_grain(buffer_size):
    ours = _read_with_states(iter(_prefetched(spelt, buffer_size)))
    theirs = _read_with_states(iter(_prefetched(grain, buffer_size)))
    assert ours == theirs
    spelt.experimental.assert_equal_output_after_checkpoint(_prefetched(spelt, buffer_size))


def test_thread_prefetch_errors_and_restart():
    def fail_at_5(x):
        if x == 5:
            raise KeyError("five")
        return x

    ds = spelt.experimental.ThreadPrefetchIterDataset(
        spelt.MapDataset.range(8).to_iter_dataset().map(fail_at_5), prefetch_buffer_size=2
    )
    it = iter(ds)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    with pytest.raises(KeyError, match="five"):
        next(it)
    assert it.get_state() == {"next_index": 5}
    it.set_state({"next_index": 6})
    assert list(it) == [6, 7]
    with pytest.raises(StopIteration):
        next(it)
    it.close()
    it.close()
    with pytest.raises(ValueError, match="closed"):
        next(it)
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        spelt.experimental.ThreadPrefetchIterDataset(ds, prefetch_buffer_size=-1)


def test_thread_prefetch_next_index():
    ds = spelt.experimental.ThreadPrefetchIterDataset(
        spelt.MapDataset.range(10).to_iter_dataset(), prefetch_buffer_size=3
    )
    it = iter(ds)
    next(it)
    assert spelt.experimental.get_next_index(it) == 1
    spelt.experimental.set_next_index(it, 7)
    assert it.get_state() == {"next_index": 7}
    assert list(it) == [7, 8, 9]
    it.set_state({"next_index": 2})
    assert spelt.experimental.get_next_index(it) == 2
    assert next(it) == 2


def test_device_put_without_jax_raises_import_error():
    with pytest.raises(ImportError):
        spelt.experimental.device_put(spelt.MapDataset.range(4).to_iter_dataset(), None)


def _run(args, env=None, timeout_s=240):
    return subprocess.Popen(
        [sys.executable, str(STEPS), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})},
    )


def _result(proc, timeout_s=240):
    out, err = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_device_put_sharded_over_8_cpu_devices():
    r = _result(_run(["sharded"], {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}))
    assert r["device_count"] == 8
    assert r["batches"] == r["expected"] and len(r["batches"]) == 200 // 16
    assert r["states"] == r["plain_states"]  # the state of the pipeline without device_put
    assert all(s == [8, 8] for s in r["shardings"])  # jax.Arrays split over the 8 devices
    n = len(r["batches"])
    for k, rest in zip((0, 1, 5, n - 1, n), r["restored"]):
        assert rest == r["expected"][k:]
    np.testing.assert_allclose(r["losses"], r["expected_losses"], rtol=1e-5)
    assert [d for d, _ in r["one_device"]] == [r["device3"]] * n
    assert [b for _, b in r["one_device"]] == r["expected"]


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_device_put_two_processes_shard_by_jax_process():
    port = str(_free_port())
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    procs = [_run(["distributed", str(i), port], env) for i in range(2)]
    results = [_result(p) for p in procs]
    assert [r["process_index"] for r in results] == [0, 1]
    assert all(r["process_count"] == 2 and r["local_devices"] == 4 for r in results)
    assert all(r["global_devices"] == 8 for r in results)
    records = [r["records"] for r in results]
    assert len(records[0]) == len(records[1]) == 32
    assert sorted(records[0] + records[1]) == list(range(64))  # each record once
    expected = spelt.MapDataset.range(64).seed(5).shuffle()
    assert records[0] == [expected[i] for i in range(0, 64, 2)]
    sums = [
        sum(a) + sum(b)
        for a, b in zip(
            np.reshape(records[0], (4, 8)).tolist(), np.reshape(records[1], (4, 8)).tolist()
        )
    ]
    assert results[0]["sums"] == results[1]["sums"] == sums
