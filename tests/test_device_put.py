"""device_put with the real jax on CPU (its thread prefetch is tested in test_thread_prefetch.py).

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

import numpy as np
import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt

STEPS = pathlib.Path(__file__).with_name("jax_steps.py")


def test_device_put_without_jax_raises_import_error():
    with pytest.raises(ImportError):
        spelt.experimental.device_put(spelt.MapDataset.range(4).to_iter_dataset(), None)


def _run(args, env=None):
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
