"""Orbax checkpoints restored on another number of processes (docs/compatibility.md,
Checkpoints across process counts), with the real orbax-checkpoint package.

Each save and restore runs in a fresh process (this file run as a script: ``python
test_orbax_elastic.py ACTION LIB API INDEX COUNT DIRECTORY``) that fakes its JAX process index
and count as tests/test_orbax.py does; the files that the processes of a multi-process save
would write into one item directory are gathered there. An ElasticIterator saved on N
processes restores on M: across the union of the processes every element of the dataset is
read exactly once, in the order of the new configuration. So is every output of a
VirtualShardIterDataset (a filtered mix over 12 virtual shards, processes saving at different
steps), and so is every element of an ElasticIterator over an interleave of shards (its
shard_state_<k>.json files). Any other iterator raises a ValueError that names what was
saved and what is asked.
"""

import json
import shutil
import sys

import pytest

import pipelines
from pipelines import timeout  # noqa: F401  (autouse fixture)

LENGTH, GLOBAL_BATCH, STEPS_BEFORE = 48, 4, 3


def _dataset(g):
    return g.MapDataset.range(LENGTH).seed(0).shuffle()


def _elastic(g, index, count):
    return g.experimental.ElasticIterator(
        _dataset(g), GLOBAL_BATCH, g.sharding.ShardOptions(index, count)
    )


def _device_put(g, index, count):
    """An ElasticIterator moved to a device by ``experimental.device_put`` (two prefetch
    threads and a map after it): its state is the ElasticIterator's position, so it restores
    on another process count as the ElasticIterator does."""
    import jax  # pylint: disable=import-outside-toplevel

    return iter(g.experimental.device_put(_elastic(g, index, count), jax.devices()[0]))


def _virtual_shard(g, v):
    """Virtual shard v of 12 of a filtered mix (for VirtualShardIterDataset, Spelt only)."""
    shard = g.sharding.ShardOptions(v, 12)
    a = _dataset(g)[shard.shard_index :: 12].to_iter_dataset().filter(lambda x: x % 5 != 0)
    b = g.MapDataset.range(100, 130)[shard.shard_index :: 12].to_iter_dataset()
    return g.IterDataset.mix([a, b], [0.5, 0.5])


def _virtual(g, index, count):
    """A VirtualShardIterDataset iterator: its checkpoint restores on any process count, each
    process taking its virtual shards' states from the files that hold them."""
    ds = g.experimental.VirtualShardIterDataset(
        lambda s: _virtual_shard(g, s.shard_index),
        12,
        g.sharding.ShardOptions(index, count),
        batch_size=2,
    )
    return iter(ds)


def _interleave(g, index, count):
    """An ElasticIterator over an interleave of 6 shards (upstream Grain after 0.2.18, Spelt
    only here): its checkpoint has a shard_state_<k>.json per shard, which any process count
    restores (tests/test_elastic_interleave.py)."""
    shards = [g.MapDataset.range(LENGTH)[s::6].to_iter_dataset() for s in range(6)]
    ds = g.experimental.InterleaveIterDataset(shards, cycle_length=2)
    return g.experimental.ElasticIterator(ds, GLOBAL_BATCH, g.sharding.ShardOptions(index, count))


def _plain(g, index, count):
    return iter(_dataset(g)[index::count].to_iter_dataset())


# The steps (in a fresh process each).


def _fake_process(lib, index, count):
    import spelt.sharding  # pylint: disable=import-outside-toplevel

    spelt.sharding.get_process_index_and_count = lambda: (index, count)
    if lib == "grain":
        import grain._src.core.sharding as grain_sharding  # pylint: disable=import-outside-toplevel

        grain_sharding.get_process_index_and_count = lambda: (index, count)


def _flat(batches):
    return [int(x) for b in batches for x in b]


def _step(action, lib, api, index, count, directory):
    import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel

    if lib == "grain":
        import grain as g  # pylint: disable=import-outside-toplevel
    else:
        import spelt as g  # pylint: disable=import-outside-toplevel
    _fake_process(lib, index, count)
    # Grain 0.2.18's handler takes only DatasetIterators: its ElasticIterator's iterator.
    elastic = _elastic(g, index, count)
    elastic_item = iter(elastic) if lib == "grain" or api == "v1" else elastic
    plain = _plain(g, index, count)
    device_put = _device_put(g, index, count)
    items = {"elastic": elastic_item, "plain": plain, "device_put": device_put}
    if lib == "spelt":
        items["virtual"] = _virtual(g, index, count)
        interleaved = _interleave(g, index, count)
        items["interleave"] = iter(interleaved) if api == "v1" else interleaved
    if action == "save":
        before = {"elastic": _flat(next(elastic_item) for _ in range(STEPS_BEFORE))}
        before["plain"] = [int(next(plain)) for _ in range(STEPS_BEFORE)]
        before["device_put"] = _flat(next(device_put) for _ in range(STEPS_BEFORE))
        if lib == "spelt":  # the processes save at different steps
            before["virtual"] = _flat(next(items["virtual"]) for _ in range(STEPS_BEFORE + index))
            before["interleave"] = _flat(next(items["interleave"]) for _ in range(STEPS_BEFORE))
        if api == "v1":
            ocp.experimental.v1.save_checkpointables(directory, items)
        else:
            with ocp.CheckpointManager(directory) as mngr:
                mngr.save(
                    1,
                    args=ocp.args.Composite(
                        **{name: g.checkpoint.CheckpointSave(it) for name, it in items.items()}
                    ),
                )
        return before
    out = {}
    for name, item in items.items():
        try:
            if api == "v1":
                ocp.experimental.v1.load_checkpointables(directory, {name: item})
            else:
                with ocp.CheckpointManager(directory) as mngr:
                    mngr.restore(
                        mngr.latest_step(),
                        args=ocp.args.Composite(**{name: g.checkpoint.CheckpointRestore(item)}),
                    )
        except Exception as e:  # pylint: disable=broad-except
            while not isinstance(e, ValueError) and e.__cause__ is not None:
                e = e.__cause__  # Orbax's v1 API raises its own error from the iterator's
            out[name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        out[name] = [int(x) for x in item] if name == "plain" else _flat(item)
    return out


# The tests (pytest).


def _run(action, lib, api, index, count, directory):
    return pipelines.run_json_script(__file__, action, lib, api, index, count, directory)


def _save(lib, api, count, tmp_path):
    """A save by `count` processes: each writes its own checkpoint, then the process files of
    processes 1.. are put beside process 0's, as on a filesystem the processes share."""
    before = []
    for index in range(count):
        before.append(_run("save", lib, api, index, count, tmp_path / f"p{index}"))
        written = tmp_path / f"p{index}"
        files = [*written.rglob(f"process_{index}-of-{count}.json")]
        for state in files + [*written.rglob("shard_state_*.json")]:
            target = tmp_path / "p0" / state.relative_to(tmp_path / f"p{index}")
            if index:
                shutil.copy(state, target)
    return before, tmp_path / "p0"


def _dataset_list():
    """The elements of _dataset, read in this process with Spelt."""
    import spelt  # pylint: disable=import-outside-toplevel

    return [int(x) for x in _dataset(spelt)]


def _elastic_order(index, count, start):
    """What host `index` of `count` reads from global position `start` (Grain's rule)."""
    ds = _dataset_list()[start + index :: count]
    host_batch = GLOBAL_BATCH // count
    return ds[: len(ds) // host_batch * host_batch]


def _assert_virtual_once(before, outs):
    """The VirtualShardIterDataset's outputs over the processes before the save and after the
    restore are those of its 12 virtual shards, each once."""
    import spelt  # pylint: disable=import-outside-toplevel

    union = [x for out in [*before, *outs] for x in out["virtual"]]
    expected = [int(x) for v in range(12) for x in _virtual_shard(spelt, v)]
    assert sorted(union) == sorted(expected)


def _assert_interleave_once(before, outs):
    """The ElasticIterator over an interleave read every element once across the processes
    before the save and after the restore."""
    union = [x for out in [*before, *outs] for x in out["interleave"]]
    assert sorted(union) == list(range(LENGTH))


def _plain_error(out, saved, index, count):
    error = out["plain"]["error"]
    assert error.startswith("ValueError: File ")
    assert f"process_{index}-of-{count}.json does not exist" in error
    assert f"written by {saved} processes" in error
    assert f"process {index} of {count}" in error
    assert f"Restore with {saved} processes" in error and "ElasticIterator" in error
    return error


def test_two_processes_restore_on_one(tmp_path):
    before, directory = _save("spelt", "manager", 2, tmp_path)
    for name in ("elastic", "plain"):
        assert before[0][name] != before[1][name]
    out = _run("restore", "spelt", "manager", 0, 1, directory)
    consumed = GLOBAL_BATCH * STEPS_BEFORE
    assert out["elastic"] == _elastic_order(0, 1, consumed)
    union = before[0]["elastic"] + before[1]["elastic"] + out["elastic"]
    assert sorted(union) == list(range(LENGTH))  # every element once: none lost, none repeated
    # device_put after the ElasticIterator: the same elements, restored from its files too.
    assert [b["device_put"] for b in before] == [b["elastic"] for b in before]
    assert out["device_put"] == out["elastic"]
    error = _plain_error(out, 2, 0, 1)
    assert "process_0-of-2.json, process_1-of-2.json" in error
    _assert_virtual_once(before, [out])
    _assert_interleave_once(before, [out])


def test_one_process_restores_on_two(tmp_path):
    (before,), directory = _save("spelt", "manager", 1, tmp_path)
    outs = [_run("restore", "spelt", "manager", i, 2, directory) for i in range(2)]
    consumed = GLOBAL_BATCH * STEPS_BEFORE
    for index, out in enumerate(outs):
        assert out["elastic"] == _elastic_order(index, 2, consumed)
        assert out["device_put"] == out["elastic"]
        _plain_error(out, 1, index, 2)
    union = before["elastic"] + outs[0]["elastic"] + outs[1]["elastic"]
    assert sorted(union) == list(range(LENGTH))
    _assert_virtual_once([before], outs)
    _assert_interleave_once([before], outs)


def test_orbax_v1_api_two_processes_restore_on_one(tmp_path):
    """Orbax's newer API calls the iterators' own save/load."""
    before, directory = _save("spelt", "v1", 2, tmp_path)
    out = _run("restore", "spelt", "v1", 0, 1, directory)
    assert out["elastic"] == _elastic_order(0, 1, GLOBAL_BATCH * STEPS_BEFORE)
    assert sorted(before[0]["elastic"] + before[1]["elastic"] + out["elastic"]) == list(
        range(LENGTH)
    )
    assert out["device_put"] == out["elastic"]  # its own load(): no item, the files' rule
    _plain_error(out, 2, 0, 1)
    _assert_virtual_once(before, [out])
    _assert_interleave_once(before, [out])


def test_grain_checkpoint_of_two_processes_restores_in_spelt_on_one(tmp_path):
    """Grain 0.2.18's ElasticIterator writes the same files; Grain itself cannot restore them
    on one process (its ValueError: the file does not exist), Spelt can. On the same process
    count each restores the other's checkpoint, through Grain's Orbax handler and Spelt's: the
    ElasticIterators, device_put after them and the plain Dataset iterators continue where
    they were saved."""
    before, directory = _save("grain", "manager", 2, tmp_path)
    spelt_before, spelt_directory = _save("spelt", "manager", 2, tmp_path / "spelt")
    for index in range(2):
        for lib, saved_by_other in (("grain", spelt_directory), ("spelt", directory)):
            out = _run("restore", lib, "manager", index, 2, saved_by_other)
            assert out["elastic"] == _elastic_order(index, 2, GLOBAL_BATCH * STEPS_BEFORE), lib
            assert out["device_put"] == out["elastic"], lib
            assert out["plain"] == list(_dataset_list()[index::2][STEPS_BEFORE:]), lib
    # The same pipelines read the same elements in both (Grain 0.2.18 has no
    # VirtualShardIterDataset, nor an ElasticIterator over an IterDataset).
    spelt_only = ("virtual", "interleave")
    assert before == [{k: v for k, v in b.items() if k not in spelt_only} for b in spelt_before]
    grain_out = _run("restore", "grain", "manager", 0, 1, directory)
    for name in ("elastic", "device_put"):
        assert "process_0-of-1.json does not exist" in grain_out[name]["error"]
    out = _run("restore", "spelt", "manager", 0, 1, directory)
    assert out["elastic"] == _elastic_order(0, 1, GLOBAL_BATCH * STEPS_BEFORE)
    assert out["device_put"] == out["elastic"]


def test_grain_checkpoint_of_one_process_restores_in_spelt_on_two(tmp_path):
    """Grain 0.2.18's one file of an ElasticIterator restores on two Spelt processes: each
    reads the global position from it and continues with its share, every element once."""
    (before,), directory = _save("grain", "manager", 1, tmp_path)
    outs = [_run("restore", "spelt", "manager", i, 2, directory) for i in range(2)]
    for index, out in enumerate(outs):
        assert out["elastic"] == _elastic_order(index, 2, GLOBAL_BATCH * STEPS_BEFORE)
        assert out["device_put"] == out["elastic"]
    assert sorted(before["elastic"] + outs[0]["elastic"] + outs[1]["elastic"]) == list(
        range(LENGTH)
    )


def test_different_positions_are_refused(tmp_path, monkeypatch):
    """Processes that saved at different steps have no one global position: a clear error."""
    import spelt  # pylint: disable=import-outside-toplevel

    for index, position in ((0, 8), (1, 12)):
        state = json.dumps({"global_next_index": position})
        (tmp_path / f"process_{index}-of-2.json").write_text(state)
    monkeypatch.setattr(spelt.sharding, "get_process_index_and_count", lambda: (0, 1))
    handler = spelt.checkpoint.CheckpointHandler()
    with pytest.raises(ValueError, match="process_0-of-2.json: 8, process_1-of-2.json: 12"):
        handler.restore(tmp_path, _elastic(spelt, 0, 1))
    (tmp_path / "process_1-of-2.json").unlink()
    with pytest.raises(ValueError, match="holds 1 of the 2 files of 2 processes"):
        handler.restore(tmp_path, _elastic(spelt, 0, 1))
    (tmp_path / "process_0-of-2.json").write_text('{"next_index": 3}')
    (tmp_path / "process_1-of-2.json").write_text('{"next_index": 3}')
    with pytest.raises(ValueError, match="process_0-of-2.json: ElasticIterator state must be"):
        handler.restore(tmp_path, _elastic(spelt, 0, 1))


def test_files_of_positions_restore_a_pipeline_after_an_elastic_iterator(tmp_path, monkeypatch):
    """A prefetch and a map after an ElasticIterator (what device_put builds) are no
    ElasticIterator, but their state is its position: files that all hold one position restore
    them on another process count, through the handler and through their own load()."""
    import asyncio  # pylint: disable=import-outside-toplevel

    import spelt  # pylint: disable=import-outside-toplevel

    def pipeline():
        ds = spelt.experimental.ThreadPrefetchIterDataset(
            _elastic(spelt, 0, 1).map(lambda b: b * 10), prefetch_buffer_size=2
        )
        return iter(ds)

    for index in range(2):
        (tmp_path / f"process_{index}-of-2.json").write_text('{"global_next_index": 12}')
    monkeypatch.setattr(spelt.sharding, "get_process_index_and_count", lambda: (0, 1))
    expected = [10 * x for x in _elastic_order(0, 1, 12)]
    restored = spelt.checkpoint.CheckpointHandler().restore(tmp_path, pipeline())
    assert _flat(restored) == expected
    it = pipeline()

    async def load():
        await (await it.load(tmp_path))

    asyncio.run(load())
    assert _flat(it) == expected
    # Different positions, or a state with more than the position: refused as before.
    (tmp_path / "process_1-of-2.json").write_text('{"global_next_index": 16}')
    with pytest.raises(ValueError, match="process_0-of-2.json: 12, process_1-of-2.json: 16"):
        spelt.checkpoint.CheckpointHandler().restore(tmp_path, pipeline())
    (tmp_path / "process_1-of-2.json").write_text('{"global_next_index": 12, "epoch": 0}')
    with pytest.raises(ValueError, match="written by 2 processes"):
        spelt.checkpoint.CheckpointHandler().restore(tmp_path, pipeline())


if __name__ == "__main__":
    action, lib, api, index, count, directory = sys.argv[1:]
    result = _step(action, lib, api, int(index), int(count), directory)
    print(json.dumps(result), flush=True)
