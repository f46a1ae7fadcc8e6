"""Multi-host JAX end to end (issue 22): N local ``jax.distributed`` processes on loopback (CPU,
gloo) run tests/multihost/mh_worker.py. Each shards a DataLoader, a Dataset-API pipeline and an
ElasticIterator with ``ShardByJaxProcess``, assembles global batches with
``jax.make_array_from_process_local_data``, saves with Orbax at step SAVE_AT and reads on. A
restore run (same N, or 2 -> 1 for the ElasticIterator) continues from the checkpoint. Checked:
every record exactly once across hosts, resumed batches equal to the uninterrupted ones, and
the same global batches as Grain 0.2.18.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _installed(dist):
    # tests/conftest.py blocks `import jax` in this process; the workers import it.
    from importlib import metadata  # pylint: disable=import-outside-toplevel

    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


if not (_installed("jax") and _installed("orbax-checkpoint")):
    pytest.skip("needs jax and orbax-checkpoint", allow_module_level=True)

import mh_worker

WORKER = Path(__file__).with_name("mh_worker.py")
TIMEOUT_S = 90
NAMES = ("loader", "ds", "elastic")


def _free_port():
    import socket  # pylint: disable=import-outside-toplevel

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(lib, action, num_processes, ckpt_dir, tmp_path):
    """Runs NUM_PROCESSES worker processes; returns their JSON outputs in process order.
    Every process is killed in ``finally`` (none is left behind)."""
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    procs, outs = [], []
    try:
        for i in range(num_processes):
            out = tmp_path / f"{lib}-{action}-{num_processes}-{i}.json"
            log = open(tmp_path / f"{lib}-{action}-{num_processes}-{i}.log", "w")  # noqa: SIM115
            procs.append(
                (
                    subprocess.Popen(
                        [sys.executable, str(WORKER), lib, action, str(i)]
                        + [str(num_processes), str(port), str(ckpt_dir), str(out)],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    ),
                    log,
                )
            )
            outs.append(out)
        for proc, _ in procs:
            proc.wait(timeout=TIMEOUT_S)
    finally:
        for proc, log in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
    for i, (proc, log) in enumerate(procs):
        assert proc.returncode == 0, Path(log.name).read_text()[-4000:]
    return [json.loads(out.read_text()) for out in outs]


def _check_exactly_once(results, name):
    """Every record of the pipeline once across hosts: in the hosts' local batches and in the
    global batches (all processes see the same global batches)."""
    local = [x for r in results for b in r[name]["local"] for x in b]
    assert sorted(local) == list(range(mh_worker.LENGTH)), name
    for r in results[1:]:
        assert r[name]["global"] == results[0][name]["global"], name
    flat = [x for b in results[0][name]["global"] for x in b]
    assert sorted(flat) == list(range(mh_worker.LENGTH)), name


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The uninterrupted 2-process run of Spelt, saving at step SAVE_AT."""
    tmp = tmp_path_factory.mktemp("spelt")
    return tmp, _run("spelt", "save", 2, tmp / "ckpt", tmp)


def test_two_hosts_every_record_once_and_global_batches(saved):
    _, results = saved
    assert [r["process"] for r in results] == [[0, 2], [1, 2]]
    for name in NAMES:
        _check_exactly_once(results, name)
        for r in results:
            for local, glob in zip(r[name]["local"], r[name]["global"]):
                # Process i's host batch is the i-th slice of the global array.
                i = r["process"][0]
                assert glob[i * len(local) : (i + 1) * len(local)] == local


def test_device_put_of_host_data_to_global_sharding_is_not_the_global_batch(saved):
    """device_put of a host batch to the global sharding either raises or gives an array of
    the host batch's shape, never the global batch: use make_array_from_process_local_data."""
    _, results = saved
    for r in results:
        assert r["device_put_error"] != [mh_worker.GLOBAL_BATCH], r["device_put_error"]


def test_restore_on_same_host_count(saved):
    tmp, results = saved
    restored = _run("spelt", "restore", 2, tmp / "ckpt", tmp)
    k = mh_worker.SAVE_AT
    for name in NAMES:
        for before, after in zip(results, restored):
            assert after[name]["local"] == before[name]["local"][k:], name
            assert after[name]["global"] == before[name]["global"][k:], name
        # Records before the save plus the resumed ones: each once.
        combined = [
            {name: {"local": b[name]["local"][:k] + a[name]["local"], "global": []}}
            for b, a in zip(results, restored)
        ]
        local = [x for r in combined for batch in r[name]["local"] for x in batch]
        assert sorted(local) == list(range(mh_worker.LENGTH)), name


def test_elastic_restore_two_hosts_on_one(saved):
    """ElasticIterator: a checkpoint of 2 processes restores on 1. Each later global step holds
    the same records as the uninterrupted 2-process run (in the 1-host order)."""
    tmp, results = saved
    (restored,) = _run("spelt", "restore-elastic", 1, tmp / "ckpt", tmp)
    assert restored["process"] == [0, 1]
    assert restored["device_put_error"] == [mh_worker.GLOBAL_BATCH]  # one host: all the data
    k = mh_worker.SAVE_AT
    expected = results[0]["elastic"]["global"][k:]
    assert [sorted(b) for b in restored["elastic"]["global"]] == [sorted(b) for b in expected]
    seen = [x for b in results[0]["elastic"]["global"][:k] for x in b]
    seen += [x for b in restored["elastic"]["global"] for x in b]
    assert sorted(seen) == list(range(mh_worker.LENGTH))


def test_same_global_batches_as_grain(saved, tmp_path):
    if not _installed("grain"):
        pytest.skip("needs grain")
    _, results = saved
    grain_results = _run("grain", "save", 2, tmp_path / "ckpt", tmp_path)
    for name in NAMES:
        for ours, theirs in zip(results, grain_results):
            assert ours[name] == theirs[name], name
    # Grain restores its own checkpoint to the same batches.
    grain_restored = _run("grain", "restore", 2, tmp_path / "ckpt", tmp_path)
    k = mh_worker.SAVE_AT
    for name in NAMES:
        for before, after in zip(grain_results, grain_restored):
            assert after[name]["global"] == before[name]["global"][k:], name
