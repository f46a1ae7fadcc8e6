"""Checkpointing with the real orbax-checkpoint package, and Grain compatibility of the files.

Each save and each restore runs in a fresh process (tests/orbax_steps.py): a DataLoader
iterator and a Dataset iterator are saved beside a numpy pytree in one Orbax step, read on
right after ``save()``, and the restoring process must read exactly what the saving one read
after the save. Checkpoints written with Grain 0.2.18 restore in Spelt and the reverse.
"""

import asyncio
import inspect
import json
import pathlib
import subprocess
import sys

import grain
import grain.python
import pytest

import pipelines
from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
import spelt.python

STEPS = pathlib.Path(__file__).with_name("orbax_steps.py")
PARAMS = {"b": [1, 2], "w": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]}


def _step(action, lib, directory):
    return pipelines.run_json_script(STEPS, action, lib, directory)


def _assert_continues(saved, restored):
    assert restored["params"] == PARAMS
    assert restored["loader"] == saved["loader"]
    assert restored["ds"] == saved["ds"]


@pytest.mark.parametrize("save_action", ["save-manager", "save-manager-async"])
def test_checkpoint_manager_restores_in_new_process(save_action, tmp_path):
    saved = _step(save_action, "spelt", tmp_path)
    assert len(saved["loader"]) == 6 and len(saved["ds"]) == 6
    step_dir = tmp_path / "1"
    for item in ("loader", "ds"):
        assert sorted(p.name for p in (step_dir / item).glob("*.json")) == ["process_0-of-1.json"]
    _assert_continues(saved, _step("restore-manager", "spelt", tmp_path))


@pytest.mark.parametrize(
    "save_lib,restore_lib",
    [("grain", "spelt"), ("spelt", "grain")],
    ids=["grain-to-spelt", "spelt-to-grain"],
)
def test_checkpoint_manager_across_libraries(save_lib, restore_lib, tmp_path):
    saved = _step("save-manager-async", save_lib, tmp_path)
    _assert_continues(saved, _step("restore-manager", restore_lib, tmp_path))


@pytest.mark.parametrize(
    "save_lib,restore_lib",
    [("spelt", "spelt"), ("grain", "spelt"), ("spelt", "grain")],
    ids=["spelt", "grain-to-spelt", "spelt-to-grain"],
)
def test_checkpointables_api_uses_iterator_save_load(save_lib, restore_lib, tmp_path):
    directory = tmp_path / "ckpt"
    saved = _step("save-v1", save_lib, directory)
    _assert_continues(saved, _step("restore-v1", restore_lib, directory))


def _run_save(coroutine):
    async def run():
        await (await coroutine)

    asyncio.run(run())


def _dataset_iterator(g):
    return iter(g.MapDataset.range(30).shuffle(seed=5).to_iter_dataset())


def _loader_iterator(g, shard=None):
    shard = shard or g.python.NoSharding()
    return iter(
        g.DataLoader(
            data_source=g.python.RangeDataSource(0, 30, 1),
            sampler=g.python.IndexSampler(30, shard, shuffle=True, seed=5, num_epochs=1),
        )
    )


class _Creating:
    """Orbax's PathAwaitingCreation: the directory exists once awaited."""

    def __init__(self, path):
        self._path = path

    async def await_creation(self):
        self._path.mkdir()
        return self._path


@pytest.mark.parametrize("make", [_dataset_iterator, _loader_iterator], ids=["dataset", "loader"])
def test_save_and_load_are_coroutines_as_grains(make, tmp_path):
    """Orbax v1's StatefulCheckpointable: ``save``/``load`` are coroutine functions (as Grain's),
    the state is taken when ``save()`` is first awaited, and the files and the restored
    positions match Grain's."""
    texts, restored = {}, {}
    for lib in (grain, spelt):
        it = make(lib)
        assert inspect.iscoroutinefunction(type(it).save)
        assert inspect.iscoroutinefunction(type(it).load)
        for _ in range(4):
            next(it)
        pending = it.save(_Creating(tmp_path / lib.__name__))  # not awaited yet
        assert inspect.iscoroutine(pending)
        for _ in range(2):  # before the first await: part of the saved state
            next(it)
        _run_save(pending)
        texts[lib] = (tmp_path / lib.__name__ / "process_0-of-1.json").read_text()
        fresh = make(lib)
        asyncio.run(_load(fresh, tmp_path / lib.__name__))
        restored[lib] = [next(fresh) for _ in range(3)]
        assert restored[lib] == [next(it) for _ in range(3)]
    assert texts[spelt] == texts[grain]
    assert restored[spelt] == restored[grain]


async def _load(it, directory):
    await (await it.load(directory))


def test_handler_files_match_grain_byte_for_byte(tmp_path):
    """Grain's and Spelt's handlers write identical files for the same pipeline position."""
    for name, make in (("dataset", _dataset_iterator), ("loader", _loader_iterator)):
        for lib, handler in (
            (spelt, spelt.checkpoint.CheckpointHandler()),
            (grain, grain.checkpoint.CheckpointHandler()),
        ):
            it = make(lib)
            for _ in range(5):
                next(it)
            directory = tmp_path / f"{name}-{lib.__name__}"
            directory.mkdir()
            handler.save(directory, it)  # Orbax's older call, as without orbax in this process
        spelt_text = (tmp_path / f"{name}-spelt" / "process_0-of-1.json").read_text()
        grain_text = (tmp_path / f"{name}-grain" / "process_0-of-1.json").read_text()
        assert spelt_text == grain_text, name


def test_multi_host_layout_one_file_per_process(tmp_path, monkeypatch):
    """Two processes (faked: Spelt and Grain read JAX's process index through the same
    function) save their shards into one directory; each restores its own file, in Spelt and
    in Grain."""
    import grain._src.core.sharding as grain_sharding  # pylint: disable=import-outside-toplevel

    expected = {}
    for index in range(2):
        monkeypatch.setattr(spelt.sharding, "get_process_index_and_count", lambda i=index: (i, 2))
        it = _loader_iterator(spelt, spelt.python.ShardOptions(index, 2))
        next(it)
        spelt.checkpoint.CheckpointHandler().save(tmp_path, it)
        expected[index] = [int(next(it)) for _ in range(4)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "process_0-of-2.json",
        "process_1-of-2.json",
    ]
    assert expected[0] != expected[1]
    for index in range(2):
        monkeypatch.setattr(spelt.sharding, "get_process_index_and_count", lambda i=index: (i, 2))
        monkeypatch.setattr(grain_sharding, "get_process_index_and_count", lambda i=index: (i, 2))
        for lib in (spelt, grain):
            it = _loader_iterator(lib, lib.python.ShardOptions(index, 2))
            restored = lib.checkpoint.CheckpointHandler().restore(tmp_path, it)
            assert restored is it
            assert [int(next(it)) for _ in range(4)] == expected[index], (lib.__name__, index)
    monkeypatch.setattr(spelt.sharding, "get_process_index_and_count", lambda: (2, 3))
    with pytest.raises(ValueError, match="process_2-of-3.json does not exist"):
        spelt.checkpoint.CheckpointHandler().restore(tmp_path, _dataset_iterator(spelt))


def test_handler_checks_its_input(tmp_path):
    handler = spelt.checkpoint.CheckpointHandler()
    with pytest.raises(ValueError, match="needs the iterator"):
        handler.save(tmp_path)
    (tmp_path / "process_0-of-1.json").write_text(json.dumps({"next_index": "x"}))
    with pytest.raises(ValueError):
        handler.restore(tmp_path, _dataset_iterator(spelt))
    assert handler.typestr() == "spelt.checkpoint.CheckpointHandler"
    assert handler.structure(tmp_path) is None and handler.metadata(tmp_path) is None


def test_legacy_names_and_orbax_args():
    code = (
        "import spelt, spelt.python, orbax.checkpoint as ocp\n"
        "p, c = spelt.python, spelt.checkpoint\n"
        "assert p.PyGrainCheckpointHandler is c.CheckpointHandler\n"
        "assert p.PyGrainCheckpointSave is c.CheckpointSave\n"
        "assert p.PyGrainCheckpointRestore is c.CheckpointRestore\n"
        "assert issubclass(c.CheckpointSave, ocp.args.CheckpointArgs)\n"
        "assert c.CheckpointSave(item=1).item == 1\n"
        "assert not hasattr(c, 'CheckpointSomething')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_orbax_args_missing_without_orbax():
    """As in Grain, the Orbax args exist only where orbax-checkpoint can be imported (it cannot
    in this process, see conftest.py)."""
    with pytest.raises(AttributeError, match="orbax-checkpoint"):
        spelt.checkpoint.CheckpointSave  # noqa: B018  pylint: disable=pointless-statement
    assert not hasattr(spelt.python, "PyGrainCheckpointRestore")
    assert spelt.python.PyGrainCheckpointHandler is spelt.checkpoint.CheckpointHandler


def test_orbax_is_not_imported_by_spelt():
    code = "import sys, spelt, spelt.python; print('orbax' in sys.modules, 'jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
