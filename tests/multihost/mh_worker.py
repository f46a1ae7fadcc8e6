"""One JAX process of tests/multihost/test_multihost.py (and the snippets of docs/multihost.md).

``python mh_worker.py LIB ACTION PROCESS_ID NUM_PROCESSES PORT CKPT_DIR OUT_JSON``

LIB is ``spelt`` or ``grain``. ACTION ``save`` reads ``SAVE_AT`` global steps of six
pipelines, all sharded by ``ShardByJaxProcess``: a DataLoader (``loader``; ``loader_mp`` with
one worker process), a Dataset-API pipeline (``ds``) and ElasticIterators over a MapDataset
(``elastic``; ``elastic_mp`` with one worker process; ``elastic_dp`` moved to the devices by
``experimental.device_put``); with Spelt also a filtered and mixed pipeline cut into virtual
shards (``virtual``: ``experimental.VirtualShardIterDataset``, Grain has none). It saves their
states with Orbax, then reads to the end. ``restore`` restores every pipeline from the latest
checkpoint (same process count) and reads to the end; ``restore-elastic`` does so for the
ElasticIterators and ``virtual`` on any process count. Each step's host batch is assembled
into a global array with ``jax.make_array_from_process_local_data`` on a 1-D mesh over all
processes' devices, and gathered back so that every process records the global batch (not
for ``virtual``, whose hosts own shards of different lengths and so end at different steps:
its host batches only). The records are written as JSON to OUT_JSON.
"""

import json
import sys

LENGTH = 72  # records in each pipeline (tens: the run stays short)
GLOBAL_BATCH = 12  # records per global step: divisible by 1, 2, 3 and 4 processes
SAVE_AT = 2  # global steps read before the checkpoint
# Pipelines whose state is global (an ElasticIterator's position): they restore on any
# number of processes. The others restore on the number that saved them.
ELASTIC = ("elastic", "elastic_mp", "elastic_dp")
SAME_COUNT = ("loader", "loader_mp", "ds")
# Spelt only: restores on any number of processes, records host batches only (see above).
VIRTUAL = ("virtual",)
VIRTUAL_SHARDS = 12  # a multiple of 1, 2, 3 and 4 processes


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


def resume_on_any_host_count(grain, ocp, ckpt_dir):
    """docs/multihost.md, Resuming on another host count: the body below is the snippet there
    (tests/multihost/test_multihost.py checks they are the same). With an empty ``ckpt_dir``
    it starts at the beginning."""
    # snippet: resume
    # The same code before and after the restart: only jax.process_count() differs.
    it = iter(
        grain.experimental.ElasticIterator(
            grain.MapDataset.range(72).shuffle(seed=5),
            12,  # global batch: each of the k processes gets 12 // k records per step
            grain.sharding.ShardByJaxProcess(),
            multiprocessing_options=grain.MultiprocessingOptions(num_workers=1),
        )
    )
    with ocp.CheckpointManager(ckpt_dir) as mngr:
        if mngr.latest_step() is not None:  # saved by any number of processes
            mngr.restore(
                mngr.latest_step(),
                args=ocp.args.Composite(elastic_mp=grain.checkpoint.CheckpointRestore(it)),
            )
    # end of snippet
    return it


def virtual_shard(g, shard):
    """The pipeline of one virtual shard of ``virtual``: a filtered shard of LENGTH records
    mixed with a shard of LENGTH // 2 others (1000 and up). Its outputs, over all
    VIRTUAL_SHARDS shards, are what the hosts must read once each."""
    part = slice(shard.shard_index, None, shard.shard_count)
    kept = g.MapDataset.range(LENGTH).shuffle(seed=13)[part].to_iter_dataset()
    others = g.MapDataset.range(1000, 1000 + LENGTH // 2)[part].to_iter_dataset()
    return g.IterDataset.mix([kept.filter(lambda r: r % 4 != 1), others], [0.6, 0.4])


def _pipelines(g, jax, ocp, names, ckpt_dir):
    """This host's iterators of ``names``; ``ShardByJaxProcess`` reads jax.process_index().
    ``elastic_mp`` is restored from ``ckpt_dir`` if it holds a checkpoint (the others are
    restored by the caller)."""
    import numpy as np  # pylint: disable=import-outside-toplevel

    host_batch = GLOBAL_BATCH // jax.process_count()

    def loader(worker_count):
        return g.DataLoader(
            data_source=g.sources.RangeDataSource(0, LENGTH, 1),
            sampler=g.samplers.IndexSampler(
                LENGTH,
                g.sharding.ShardByJaxProcess(drop_remainder=True),
                shuffle=True,
                seed=7,
                num_epochs=1,
            ),
            operations=[g.transforms.Batch(host_batch, drop_remainder=True)],
            worker_count=worker_count,
        )

    def elastic():
        return g.experimental.ElasticIterator(
            g.MapDataset.range(LENGTH).shuffle(seed=3),
            GLOBAL_BATCH,
            g.sharding.ShardByJaxProcess(),
        )

    def elastic_dp():
        # device_put onto this process's devices (a global sharding would take the host's rows
        # for the whole array, see _device_put_fails); make_array_from_process_local_data then
        # assembles the global batch.
        local_mesh = jax.sharding.Mesh(np.array(jax.local_devices()), ("data",))
        local = jax.sharding.NamedSharding(local_mesh, jax.sharding.PartitionSpec("data"))
        return g.experimental.device_put(elastic(), local)

    makers = {
        "loader": lambda: loader(0),
        # One worker process per host: its output and checkpoint are those of worker_count=0.
        "loader_mp": lambda: loader(1),
        "ds": lambda: (
            g.MapDataset.range(LENGTH)
            .shuffle(seed=11)[jax.process_index() :: jax.process_count()]
            .to_iter_dataset()
            .batch(host_batch, drop_remainder=True)
        ),
        # Grain 0.2.18's Orbax handler takes DatasetIterators only: the ElasticIterator's
        # iterator (iter() returns it).
        "elastic": elastic,
        "elastic_dp": elastic_dp,
        "virtual": lambda: g.experimental.VirtualShardIterDataset(
            lambda shard: virtual_shard(g, shard),
            VIRTUAL_SHARDS,
            g.sharding.ShardByJaxProcess(),
            batch_size=2,
        ),
    }
    its = {}
    for name in names:
        if name == "elastic_mp":
            # Worker processes inside the ElasticIterator (its multiprocessing_options, as
            # Grain's): an mp_prefetch after it would make the state the workers' positions,
            # not the global one.
            its[name] = resume_on_any_host_count(g, ocp, ckpt_dir)
        else:
            its[name] = iter(makers[name]())
    return its


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


def _step(jax, name, it, out):
    """Reads the next host batch of ``it`` into ``out`` (local and global); False at the end."""
    try:
        local = next(it)
    except StopIteration:
        return False
    if name == "elastic_dp":  # a jax.Array on this process's devices
        assert isinstance(local, jax.Array), type(local)
        assert local.sharding.device_set == set(jax.local_devices()), local.sharding
    out[name]["local"].append([int(x) for x in local])
    if name not in VIRTUAL:
        out[name]["global"].append(_global_batch(jax, local))
    return True


def _read_to_end(jax, its, out):
    """Reads every pipeline to its end (each host's shard has the same number of steps, but
    for ``virtual``, which makes no collective call)."""
    for name, it in its.items():
        while _step(jax, name, it, out):
            pass


def _restore_by_hand(its, ckpt_dir):
    """Grain 0.2.18 cannot restore a checkpoint of another process count through Orbax (its
    handler reads only process_<i>-of-<n>.json of this process's i and n; the test checks the
    error): this process reads the file of process 0 and calls set_state, which is what its
    ElasticIterator's state allows (every process saved the same global position)."""
    import glob  # pylint: disable=import-outside-toplevel
    import os  # pylint: disable=import-outside-toplevel

    step = max(int(d) for d in os.listdir(ckpt_dir) if d.isdigit())
    for name, it in its.items():
        (path,) = glob.glob(os.path.join(ckpt_dir, str(step), name, "process_0-of-*.json"))
        with open(path) as f:
            it.set_state(json.load(f))


def main(lib, action, process_id, num_processes, port, ckpt_dir, out_json):
    """ACTION: ``save`` (every pipeline; SAVE_AT steps, Orbax save, then to the end),
    ``restore`` (every pipeline, same process count as the save), ``restore-elastic`` (the
    ElasticIterator pipelines, on any process count; Grain: by hand, see _restore_by_hand) or
    ``grain-orbax-elastic`` (Grain's Orbax restore of an ElasticIterator on another count: the
    error it raises)."""
    jax = _init(process_id, num_processes, port)
    import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel

    if lib == "grain":
        import grain as g  # pylint: disable=import-outside-toplevel
        from absl import flags  # pylint: disable=import-outside-toplevel

        # With jax installed, Grain's mp_prefetch reads its absl flags: outside absl.app.run
        # they must be parsed first (UnparsedFlagAccessError otherwise).
        flags.FLAGS.mark_as_parsed()
    else:
        import spelt as g  # pylint: disable=import-outside-toplevel

    spelt_only = VIRTUAL if lib == "spelt" else ()
    names = {"restore-elastic": ELASTIC + spelt_only, "grain-orbax-elastic": ("elastic",)}.get(
        action, ELASTIC + SAME_COUNT + spelt_only
    )
    by_hand = lib == "grain" and action == "restore-elastic"
    its = _pipelines(g, jax, ocp, names, ckpt_dir + "-none" if by_hand else ckpt_dir)
    out = {name: {"local": [], "global": []} for name in its}
    out["process"] = [jax.process_index(), jax.process_count()]
    if action == "save":
        for _ in range(SAVE_AT):
            for name, it in its.items():
                assert _step(jax, name, it, out), name
        with ocp.CheckpointManager(ckpt_dir) as mngr:
            mngr.save(
                SAVE_AT,
                args=ocp.args.Composite(
                    **{name: g.checkpoint.CheckpointSave(it) for name, it in its.items()}
                ),
            )
            mngr.wait_until_finished()
    elif by_hand:
        _restore_by_hand(its, ckpt_dir)
    else:
        others = [name for name in its if name != "elastic_mp"]  # restored when made
        with ocp.CheckpointManager(ckpt_dir) as mngr:
            try:
                mngr.restore(
                    mngr.latest_step(),
                    args=ocp.args.Composite(
                        **{name: g.checkpoint.CheckpointRestore(its[name]) for name in others}
                    ),
                )
            except Exception as e:  # pylint: disable=broad-except
                if action != "grain-orbax-elastic":
                    raise
                out["error"] = f"{type(e).__name__}: {e}"
    if "error" not in out:
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
