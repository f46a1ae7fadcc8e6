"""One JAX process of tests/multihost/test_multihost.py (and the snippets of docs/multihost.md).

``python mh_worker.py LIB ACTION PROCESS_ID NUM_PROCESSES PORT CKPT_DIR OUT_JSON``

LIB is ``spelt`` or ``grain``. ACTION ``save`` reads ``SAVE_AT`` global steps of three
pipelines (a DataLoader, a Dataset-API pipeline and an ElasticIterator, all sharded by
``ShardByJaxProcess``), saves their states with Orbax, then reads to the end; ``restore``
restores the states of the latest checkpoint and reads to the end. Each step's host batch is
assembled into a global array with ``jax.make_array_from_process_local_data`` on a 1-D mesh
over all processes' devices, and gathered back so that every process records the global batch.
The records are written as JSON to OUT_JSON.
"""

import json
import sys

LENGTH = 64  # records in each pipeline
GLOBAL_BATCH = 8  # records per global step
SAVE_AT = 3  # global steps read before the checkpoint


def _init(process_id, num_processes, port):
    import jax  # pylint: disable=import-outside-toplevel

    jax.config.update("jax_platforms", "cpu")
    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except AttributeError:  # older JAX without the option
        pass
    if num_processes > 1:
        jax.distributed.initialize(
            coordinator_address=f"127.0.0.1:{port}",
            num_processes=num_processes,
            process_id=process_id,
            initialization_timeout=60,
        )
    return jax


def _pipelines(g, jax):
    """The three pipelines of this host; ``ShardByJaxProcess`` reads jax.process_index()."""
    host_batch = GLOBAL_BATCH // jax.process_count()
    loader = g.DataLoader(
        data_source=g.sources.RangeDataSource(0, LENGTH, 1),
        sampler=g.samplers.IndexSampler(
            LENGTH,
            g.sharding.ShardByJaxProcess(drop_remainder=True),
            shuffle=True,
            seed=7,
            num_epochs=1,
        ),
        operations=[g.transforms.Batch(host_batch, drop_remainder=True)],
    )
    ds = (
        g.MapDataset.range(LENGTH)
        .shuffle(seed=11)[jax.process_index() :: jax.process_count()]
        .to_iter_dataset()
        .batch(host_batch, drop_remainder=True)
    )
    elastic = g.experimental.ElasticIterator(
        g.MapDataset.range(LENGTH).shuffle(seed=3),
        GLOBAL_BATCH,
        g.sharding.ShardByJaxProcess(),
    )
    # Grain 0.2.18's Orbax handler takes DatasetIterators only: the ElasticIterator's iterator.
    return {"loader": iter(loader), "ds": iter(ds), "elastic": iter(elastic)}


def _global_batch(jax, local):
    """The global array of this step (host batches concatenated in process order), gathered
    back to numpy on every process."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    from jax.experimental import multihost_utils  # pylint: disable=import-outside-toplevel

    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    local = np.asarray(local)
    global_array = jax.make_array_from_process_local_data(sharding, local)
    assert global_array.shape == (local.shape[0] * jax.process_count(),), global_array.shape
    gathered = multihost_utils.process_allgather(global_array, tiled=True)
    return [int(x) for x in np.asarray(gathered)]


def _device_put_fails(jax):
    """What ``device_put`` of host data to the global sharding gives: the error's name, or the
    shape of the result (the host's data taken as the whole array, not the global batch)."""
    import numpy as np  # pylint: disable=import-outside-toplevel

    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    local = np.arange(GLOBAL_BATCH // jax.process_count())
    try:
        out = jax.block_until_ready(jax.device_put(local, sharding))
    except Exception as e:  # noqa: BLE001  # pylint: disable=broad-except
        return type(e).__name__
    return list(out.shape)


def _read_to_end(jax, its, out):
    """Reads every pipeline to its end (each host's shard has the same number of steps)."""
    for name, it in its.items():
        for local in it:
            out[name]["local"].append([int(x) for x in local])
            out[name]["global"].append(_global_batch(jax, local))


def main(lib, action, process_id, num_processes, port, ckpt_dir, out_json):
    jax = _init(process_id, num_processes, port)
    import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel

    if lib == "grain":
        import grain as g  # pylint: disable=import-outside-toplevel
    else:
        import spelt as g  # pylint: disable=import-outside-toplevel

    its = _pipelines(g, jax)
    out = {name: {"local": [], "global": []} for name in its}
    out["process"] = [jax.process_index(), jax.process_count()]
    with ocp.CheckpointManager(ckpt_dir) as mngr:
        if action == "save":
            for _ in range(SAVE_AT):
                for name, it in its.items():
                    local = next(it)
                    out[name]["local"].append([int(x) for x in local])
                    out[name]["global"].append(_global_batch(jax, local))
            mngr.save(
                SAVE_AT,
                args=ocp.args.Composite(
                    **{name: g.checkpoint.CheckpointSave(it) for name, it in its.items()}
                ),
            )
            mngr.wait_until_finished()
        else:
            step = mngr.latest_step()
            names = list(its) if action == "restore" else ["elastic"]
            mngr.restore(
                step,
                args=ocp.args.Composite(
                    **{name: g.checkpoint.CheckpointRestore(its[name]) for name in names}
                ),
            )
            its = {name: its[name] for name in names}
    _read_to_end(jax, its, out)
    out["device_put_error"] = _device_put_fails(jax)
    with open(out_json, "w") as f:
        json.dump(out, f)
    for it in its.values():
        close = getattr(it, "close", None)
        if close is not None:
            close()
    if num_processes > 1:
        jax.distributed.shutdown()


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), a[5], a[6])
