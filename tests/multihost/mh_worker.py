"""One JAX process of tests/multihost/test_multihost.py (and the snippets of docs/multihost.md).

``python mh_worker.py LIB ACTION PROCESS_ID NUM_PROCESSES PORT CKPT_DIR OUT_JSON``

LIB is ``spelt`` or ``grain``. ACTION ``save`` reads ``SAVE_AT`` global steps of six
pipelines, all sharded by ``ShardByJaxProcess``: a DataLoader (``loader``; ``loader_mp`` with
one worker process), a Dataset-API pipeline (``ds``) and ElasticIterators over a MapDataset
(``elastic``; ``elastic_mp`` with one worker process; ``elastic_dp`` moved to the devices by
``experimental.device_put``); with Spelt also a filtered and mixed pipeline cut into virtual
shards (``virtual``: ``experimental.VirtualShardIterDataset``, Grain has none) and first-fit
packing in virtual shards with worker processes (``virtual_pack_mp``: ``mp_prefetch``, one
worker process per shard; each host batch, 2 bins, is recorded as their tokens). It saves their
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

LENGTH = 72  # records in each pipeline (tens: the run stays short; the snippets write 72)
GLOBAL_BATCH = 12  # records per global step: divisible by 1, 2, 3 and 4 processes
SAVE_AT = 2  # global steps read before the checkpoint
# Pipelines whose state is global (an ElasticIterator's position): they restore on any
# number of processes. The others restore on the number that saved them.
ELASTIC = ("elastic", "elastic_mp", "elastic_dp")
SAME_COUNT = ("loader", "loader_mp", "ds")
# Spelt only: restores on any number of processes, records host batches only (see above).
VIRTUAL = ("virtual", "virtual_pack_mp")
VIRTUAL_SHARDS = 12  # a multiple of 1, 2, 3 and 4 processes
# virtual_pack_mp: one worker process per virtual shard (its mp_prefetch), so few shards: at
# least the largest process count (4), 4 worker processes over all hosts.
PACK_SHARDS = 4


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


def virtual_shards_with_workers(grain):
    """docs/multihost.md, Resuming any pipeline (``virtual_pack_mp``): filtered records packed
    first-fit in PACK_SHARDS virtual shards, batches of 2 bins, a worker process per shard
    computing its records (their Python ``map``). Over all shards, the packs hold every token
    of the records kept (``r % 5 != 0``) once."""
    import numpy as np  # pylint: disable=import-outside-toplevel

    # snippet: virtual
    def make_shard(shard):  # shard: grain.sharding.ShardOptions(v, K) of one virtual shard
        records = grain.MapDataset.range(72).shuffle(seed=17)[
            shard.shard_index :: shard.shard_count
        ]
        sequences = records.filter(lambda r: r % 5 != 0).map(
            lambda r: {"tokens": np.arange(r % 3 + 1) + 100 * r + 1}
        )
        return grain.experimental.FirstFitPackIterDataset(
            sequences.to_iter_dataset(), length_struct={"tokens": 6}, num_packing_bins=2
        )

    ds = grain.experimental.VirtualShardIterDataset(
        make_shard,
        num_virtual_shards=4,  # fixed for the job: at least (best a multiple of) every host count
        shard_options=grain.sharding.ShardByJaxProcess(),
        batch_size=2,
    ).mp_prefetch(grain.MultiprocessingOptions(num_workers=1))  # 1 worker process per shard
    it = iter(ds)
    # end of snippet
    # Each shard (batch of packing of to_iter_dataset) reads its records from a worker process.
    stages = [shard.parents[0].parents[0] for shard in ds.parents]
    assert all(type(s).__name__ == "ProcessPrefetchIterDataset" for s in stages), stages
    assert ds.num_virtual_shards == PACK_SHARDS
    return it


def shard_per_host(grain, jax, global_batch, worker_count):
    """docs/multihost.md, Shard per host: this host's DataLoader (``loader``, ``loader_mp``)
    and Dataset-API pipeline (``ds``) over LENGTH records."""
    # snippet: shard
    host_batch = global_batch // jax.process_count()
    loader = grain.DataLoader(
        data_source=grain.sources.RangeDataSource(0, 72, 1),
        sampler=grain.samplers.IndexSampler(
            72,
            grain.sharding.ShardByJaxProcess(drop_remainder=True),
            shuffle=True,
            seed=7,
            num_epochs=1,
        ),
        operations=[grain.transforms.Batch(host_batch, drop_remainder=True)],
        worker_count=worker_count,  # 0, or worker processes: the same batches and checkpoints
    )
    # The Dataset API: one global shuffle (the same seed on every host), then this host's slice.
    ds = (
        grain.MapDataset.range(72)
        .shuffle(seed=11)[jax.process_index() :: jax.process_count()]
        .to_iter_dataset()
        .batch(host_batch, drop_remainder=True)
    )
    # end of snippet
    return loader, ds


def _pipelines(g, jax, ocp, names, ckpt_dir):
    """This host's iterators of ``names``; ``ShardByJaxProcess`` reads jax.process_index().
    ``elastic_mp`` is restored from ``ckpt_dir`` if it holds a checkpoint (the others are
    restored by the caller)."""
    import numpy as np  # pylint: disable=import-outside-toplevel

    def loader(worker_count):
        return shard_per_host(g, jax, GLOBAL_BATCH, worker_count)[0]

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
        "ds": lambda: shard_per_host(g, jax, GLOBAL_BATCH, 0)[1],
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
        if name == "virtual_pack_mp":
            its[name] = virtual_shards_with_workers(g)
        elif name == "elastic_mp":
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

    host_batch_array = np.asarray(local)
    # snippet: assemble
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    global_array = jax.make_array_from_process_local_data(sharding, host_batch_array)
    # global_array.shape[0] == host_batch * jax.process_count(), rows in process order
    # end of snippet
    host_batch = len(host_batch_array)
    assert global_array.shape == (host_batch * jax.process_count(),), global_array.shape
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
    if name == "virtual_pack_mp":  # 2 bins: record their tokens, not their padding
        local = local["tokens"][local["tokens_segment_ids"] > 0]
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


def save_with_orbax(grain, ocp, ckpt_dir, step, its):
    """docs/multihost.md, Checkpoint with Orbax: saves every iterator of ``its`` (name:
    iterator) at ``step``."""
    # snippet: orbax_save
    with ocp.CheckpointManager(ckpt_dir) as mngr:
        mngr.save(
            step,
            args=ocp.args.Composite(
                **{name: grain.checkpoint.CheckpointSave(it) for name, it in its.items()}
            ),
        )
        mngr.wait_until_finished()
    # end of snippet


def restore_with_orbax(grain, ocp, ckpt_dir, its):
    """docs/multihost.md, Checkpoint with Orbax: restores every iterator of ``its`` from the
    latest step."""
    # snippet: orbax_restore
    with ocp.CheckpointManager(ckpt_dir) as mngr:
        mngr.restore(
            mngr.latest_step(),
            args=ocp.args.Composite(
                **{name: grain.checkpoint.CheckpointRestore(it) for name, it in its.items()}
            ),
        )
    # end of snippet


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
        save_with_orbax(g, ocp, ckpt_dir, SAVE_AT, its)
    elif by_hand:
        _restore_by_hand(its, ckpt_dir)
    else:
        others = {name: it for name, it in its.items() if name != "elastic_mp"}  # restored
        try:
            restore_with_orbax(g, ocp, ckpt_dir, others)
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
