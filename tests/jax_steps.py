"""JAX steps for tests/test_device_put.py, each run in a fresh process with jax on CPU.

``python jax_steps.py ACTION [ARGS]`` prints one JSON object on its last line:

* ``sharded``: 8 virtual CPU devices (XLA_FLAGS set by the caller). ``device_put`` with a
  NamedSharding over all of them and with one device; reports the batches, their shardings,
  the iterator state after each batch beside the state of the same pipeline without
  device_put, what a restore from each position reads, and the losses of a jitted training
  step fed by it.
* ``distributed PROCESS_ID PORT``: one of two processes joined by ``jax.distributed`` on
  localhost (4 CPU devices each). Each reads its ``ShardByJaxProcess`` shard (a slice of
  the shuffled records) and ``device_put`` onto its local devices, assembles global batches with
  ``jax.make_array_from_process_local_data`` and runs a jitted step over all 8 devices;
  reports its records and the global sums.
"""

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

import spelt

BATCH = 16


def _pipeline():
    return (
        spelt.MapDataset.range(200)
        .seed(3)
        .shuffle()
        .map(lambda x: {"x": np.full((4,), x, np.float32), "y": np.int32(x)})
        .batch(BATCH, drop_remainder=True)
        .to_iter_dataset()
    )


def _host(batch):
    return {k: np.asarray(v).tolist() for k, v in batch.items()}


def sharded():
    devices = jax.devices()
    mesh = jax.sharding.Mesh(np.array(devices), axis_names=("data",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    ds = spelt.experimental.device_put(_pipeline(), sharding, cpu_buffer_size=3)
    it, plain = iter(ds), iter(_pipeline())
    batches, states, plain_states, shardings = [], [], [], []
    for batch in it:
        batches.append(_host(batch))
        states.append(it.get_state())
        next(plain)
        plain_states.append(plain.get_state())
        shardings.append(
            [
                isinstance(v, jax.Array) and v.sharding == sharding and len(v.addressable_shards)
                for v in batch.values()
            ]
        )
    restored = []
    for k in (0, 1, 5, len(batches) - 1, len(batches)):
        fresh = iter(ds)
        if k:
            fresh.set_state(states[k - 1])
        restored.append([_host(b) for b in fresh])

    @jax.jit
    def train_step(w, batch):
        loss = jnp.mean((batch["x"] @ w - batch["y"].astype(jnp.float32)) ** 2)
        return w - 1e-6 * jax.grad(lambda w: jnp.mean((batch["x"] @ w) ** 2))(w), loss

    w, losses = jnp.ones((4,)), []
    for batch in ds:
        w, loss = train_step(w, batch)
        losses.append(float(loss))
    one_device = [
        (str(next(iter(b["x"].devices()))), _host(b))
        for b in spelt.experimental.device_put(_pipeline(), devices[3], device_buffer_size=0)
    ]
    return {
        "device_count": len(devices),
        "batches": batches,
        "expected": [_host(b) for b in _pipeline()],
        "states": states,
        "plain_states": plain_states,
        "shardings": shardings,
        "restored": restored,
        "losses": losses,
        "expected_losses": _numpy_losses([_host(b) for b in _pipeline()]),
        "one_device": one_device,
        "device3": str(devices[3]),
    }


def _numpy_losses(batches):
    w, losses = np.ones((4,), np.float32), []
    for b in batches:
        x, y = np.asarray(b["x"], np.float32), np.asarray(b["y"], np.float32)
        losses.append(float(np.mean((x @ w - y) ** 2)))
        w = w - 1e-6 * (2 * x.T @ (x @ w) / x.shape[0] / 1)
    return losses


def distributed(process_id, port):
    jax.distributed.initialize(
        coordinator_address=f"localhost:{port}", num_processes=2, process_id=process_id
    )
    mesh = jax.sharding.Mesh(np.array(jax.devices()), axis_names=("data",))
    global_sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    local_mesh = jax.sharding.Mesh(np.array(jax.local_devices()), axis_names=("data",))
    local_sharding = jax.sharding.NamedSharding(local_mesh, jax.sharding.PartitionSpec("data"))
    shard = spelt.sharding.ShardByJaxProcess(drop_remainder=True)
    local_ds = (
        spelt.MapDataset.range(64)
        .seed(5)
        .shuffle()[shard.shard_index :: shard.shard_count]
        .batch(8, drop_remainder=True)
        .to_iter_dataset()
    )
    ds = spelt.experimental.device_put(local_ds, local_sharding)
    step = jax.jit(lambda x: jnp.sum(x), out_shardings=None)
    records, sums = [], []
    for local in ds:
        assert local.sharding == local_sharding, local.sharding
        records.extend(np.asarray(local).tolist())
        full = jax.make_array_from_process_local_data(global_sharding, np.asarray(local))
        sums.append(int(step(full)))
    return {
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": len(jax.local_devices()),
        "global_devices": len(jax.devices()),
        "records": records,
        "sums": sums,
    }


if __name__ == "__main__":
    action = sys.argv[1]
    if action == "sharded":
        result = sharded()
    else:
        result = distributed(int(sys.argv[2]), int(sys.argv[3]))
    print(json.dumps(result))
