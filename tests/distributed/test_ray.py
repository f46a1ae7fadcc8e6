"""Ray actors as the executor of the ordered core (spelt.experimental.RayOptions), on a local Ray
cluster of 2 CPUs started by this module: output and states identical to local runs, checkpoints
across backends, an actor killed mid-run, a timeout, a restarted trainer, two trainers.

Run by `make test-ray` (installs Ray); `make test` leaves tests/distributed out.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time

import cloudpickle
import pytest

import spelt

ray = pytest.importorskip("ray", reason="Ray is optional: `make test-ray` installs it")

import ray_pipelines as rp  # noqa: E402  (after the skip: it is only for these tests)

cloudpickle.register_pickle_by_value(rp)  # actors do not have tests/ on their sys.path
RayOptions = spelt.experimental.RayOptions
# Actors of half a CPU: up to four fit in the 2-CPU cluster.
HALF = dict(num_cpus_per_actor=0.5)


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster (2 CPUs); its address. Stopped at the end, however the tests end."""
    # address="local": a new cluster of our own, never one found running on this machine (Ray
    # otherwise attaches to the latest cluster it finds in /tmp/ray, and then refuses num_cpus).
    ray.init(
        address="local", num_cpus=2, namespace="spelt", include_dashboard=False, log_to_driver=False
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def reference():
    """(elements, states) of the pipeline without workers."""
    return rp.read(iter(rp.dataset()))


@pytest.mark.parametrize("num_actors", [1, 3])
def test_output_and_states_equal_zero_workers(cluster, reference, num_actors):
    elements, states = rp.read(iter(rp.dataset(RayOptions(num_actors=num_actors, **HALF))))
    rp.assert_same(elements, reference[0])
    assert states == reference[1]


def test_loader_output_and_state_bytes_equal_worker_count_zero(cluster):
    expected = rp.read(iter(rp.loader()))
    actual = rp.read(iter(rp.loader(RayOptions(num_actors=2, **HALF))))
    rp.assert_same(actual[0], expected[0])
    assert actual[1] == expected[1]


def test_checkpoints_restore_across_backends(cluster, reference):
    full, states = reference
    on_ray = rp.dataset(RayOptions(num_actors=2, **HALF))
    for k in (1, len(full) // 3, len(full) - 1):
        # Ray -> no workers.
        it = iter(on_ray)
        rp.read(it, k)
        local = iter(rp.dataset())
        local.set_state(it.get_state())
        rp.assert_same(rp.read(local)[0], full[k:])
        # No workers -> Ray, on the iterator that was read ahead.
        it.set_state(states[k - 1])
        rp.assert_same(rp.read(it)[0], full[k:])
    # Worker processes -> Ray, and Ray -> worker processes.
    processes = rp.dataset(spelt.MultiprocessingOptions(num_workers=2))
    it = iter(processes)
    rp.read(it, 5)
    ray_it = iter(on_ray)
    ray_it.set_state(it.get_state())
    rp.assert_same(rp.read(ray_it, 5)[0], full[5:10])
    it.set_state(ray_it.get_state())
    rp.assert_same(rp.read(it)[0], full[10:])


def test_loader_checkpoint_restores_with_worker_processes_and_back(cluster):
    full, _ = rp.read(iter(rp.loader()))
    on_ray = iter(rp.loader(RayOptions(num_actors=2, **HALF)))
    rp.read(on_ray, 7)
    processes = iter(
        spelt.DataLoader(
            data_source=[rp.record(i) for i in range(120)],
            sampler=rp.loader()._sampler,  # pylint: disable=protected-access
            operations=[rp.LoaderFilter(), rp.LoaderJitter(), spelt.transforms.Batch(4)],
            worker_count=2,
        )
    )
    processes.set_state(on_ray.get_state())
    rp.assert_same(rp.read(processes, 6)[0], full[7:13])
    on_ray.set_state(processes.get_state())
    rp.assert_same(rp.read(on_ray)[0], full[13:])


def test_killed_actor_is_replaced_and_its_chunks_recomputed(cluster):
    options = RayOptions(num_actors=2, actor_name="kill", **HALF)
    expected = rp.read(iter(rp.dataset(length=900, transform=rp.slow)))
    try:
        it = iter(rp.dataset(options, length=900, transform=rp.slow))
        head = rp.read(it, 12)
        before = rp.actor_locations(options)
        ray.kill(ray.get_actor("kill-0", namespace="spelt"))  # chunks of it are in flight
        tail = rp.read(it)
        after = rp.actor_locations(options)
    finally:
        spelt.ray.stop_actors("kill", 2)
    rp.assert_same(head[0] + tail[0], expected[0])
    assert head[1] + tail[1] == expected[1]
    assert after[0] != before[0] and after[1] == before[1]  # a new actor 0, the same actor 1


def _trainer(address: str, spec: dict, out_file: str, wait: bool = True):
    """A trainer process (ray_pipelines.py as a script)."""
    process = subprocess.Popen(
        [sys.executable, rp.__file__, address, json.dumps(spec), out_file],
        env={**os.environ, "PYTHONPATH": os.path.dirname(rp.__file__)},
    )
    if wait:
        process.wait(timeout=300)
    return process


def _load(path) -> dict:
    with open(path, "rb") as f:
        return pickle.load(f)


def test_restarted_trainer_reattaches_to_named_actors(cluster, tmp_path):
    expected = rp.read(iter(rp.loader()))
    options = dict(num_actors=2, actor_name="trainer", **HALF)
    try:
        first = _trainer(
            cluster,
            {"options": options, "loader": {}, "batches": 7, "kill_self": True},
            str(tmp_path / "a"),
        )
        assert first.returncode == -9  # killed with no cleanup
        a = _load(tmp_path / "a")
        spec = {"options": options, "loader": {}, "state": a["states"][-1].decode()}
        assert _trainer(cluster, spec, str(tmp_path / "b")).returncode == 0
        b = _load(tmp_path / "b")
    finally:
        spelt.ray.stop_actors("trainer", 2)
    assert b["actors"] == a["actors"]  # the same actor processes
    rp.assert_same(a["batches"] + b["batches"], expected[0])
    assert a["states"] + b["states"] == expected[1]


def test_two_trainers_share_actors_and_each_gets_its_shard(cluster, tmp_path):
    options = dict(num_actors=2, actor_name="shared", **HALF)
    try:
        trainers = [
            _trainer(
                cluster,
                {"options": options, "loader": {"shard_index": i, "shard_count": 2}},
                str(tmp_path / str(i)),
                wait=False,
            )
            for i in range(2)
        ]
        assert [t.wait(timeout=300) for t in trainers] == [0, 0]
    finally:
        spelt.ray.stop_actors("shared", 2)
    outputs = [_load(tmp_path / str(i)) for i in range(2)]
    assert outputs[0]["actors"] == outputs[1]["actors"]
    for i, out in enumerate(outputs):
        expected = rp.read(iter(rp.loader(shard_index=i, shard_count=2)))
        rp.assert_same(out["batches"], expected[0])
        assert out["states"] == expected[1]


def test_an_error_in_an_actor_is_raised_at_its_element_and_the_next_call_goes_on(cluster):
    reference = rp.read(iter(rp.dataset(transform=int, batch=False)))[0]
    value = int(reference[30]["id"])
    it = iter(
        rp.dataset(RayOptions(num_actors=2, **HALF), transform=rp.Explode(value), batch=False)
    )
    head = rp.read(it, 30)[0]
    with pytest.raises(ValueError, match=f"cannot handle {value}") as raised:
        next(it)
    assert "raised in Ray actor" in "".join(raised.value.__notes__)
    assert "cannot handle" in raised.value.__cause__.tb  # the actor's traceback
    rp.assert_same(head + rp.read(it)[0], reference[:30] + reference[31:])


def test_a_stalled_chunk_raises_timeout_error_and_the_position_is_kept(cluster):
    reference = rp.read(iter(rp.dataset(transform=int, batch=False)))  # int: Stall's identity
    value = int(reference[0][60]["id"])
    options = RayOptions(num_actors=1, timeout_s=5, **HALF)
    it = iter(rp.dataset(options, transform=rp.Stall(value, seconds=20), batch=False))
    elements = []
    with pytest.raises(TimeoutError, match=r"within RayOptions.timeout_s = 5 s"):
        while True:
            start = time.monotonic()
            elements.append(next(it))
    assert time.monotonic() - start < 12  # not the 20 s of the stalled element
    assert 0 < len(elements) <= 60
    rp.assert_same(elements, reference[0][: len(elements)])
    # The position is kept: what follows it is what follows the elements returned (the state
    # may have moved past elements that the filter removed, but not past any other).
    local = iter(rp.dataset(transform=int, batch=False))
    local.set_state(it.get_state())
    rp.assert_same(rp.read(local)[0], reference[0][len(elements) :])
