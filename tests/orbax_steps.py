"""Orbax checkpoint steps for tests/test_orbax.py, each run in a fresh process.

``python orbax_steps.py ACTION LIB DIRECTORY`` with LIB ``spelt`` or ``grain`` (the same
pipelines built with either library) prints one JSON object:

* ``save-manager`` / ``save-manager-async``: reads a few elements of a DataLoader iterator and
  a Dataset iterator, saves both beside a numpy pytree in one ``CheckpointManager`` step
  (``grain.checkpoint.CheckpointSave``), reads on right after ``save()`` returns, and prints
  what it read after the save.
* ``restore-manager``: restores that step into new iterators (``CheckpointRestore``) and prints
  the pytree and what the iterators read next.
* ``save-v1`` / ``restore-v1``: the same through Orbax's newer API
  (``ocp.experimental.v1.save_checkpointables``), which calls the iterators' own
  ``save``/``load``.
"""

import json
import sys

import numpy as np
import orbax.checkpoint as ocp

STEPS_BEFORE = 3  # elements read before saving
STEPS_AFTER = 6  # elements read after saving (and after restoring)
_open_iterators = []


def iterators(g):
    loader = g.DataLoader(
        data_source=g.python.RangeDataSource(0, 50, 1),
        sampler=g.python.IndexSampler(
            50, g.python.NoSharding(), shuffle=True, seed=7, num_epochs=2
        ),
        operations=[g.python.Batch(4)],
    )
    ds = g.MapDataset.range(40).shuffle(seed=11).map(lambda x: x + 1000).to_iter_dataset().batch(3)
    its = (iter(loader), iter(ds))
    _open_iterators.extend(its)
    return its


def _read(it, n):
    return [np.asarray(next(it)).tolist() for _ in range(n)]


def _params():
    return {"w": np.arange(6.0).reshape(2, 3), "b": np.array([1, 2], np.int32)}


def save_manager(g, directory, async_):
    loader_it, ds_it = iterators(g)
    _read(loader_it, STEPS_BEFORE)
    _read(ds_it, STEPS_BEFORE)
    options = ocp.CheckpointManagerOptions(enable_async_checkpointing=async_)
    with ocp.CheckpointManager(directory, options=options) as mngr:
        mngr.save(
            1,
            args=ocp.args.Composite(
                params=ocp.args.StandardSave(_params()),
                loader=g.checkpoint.CheckpointSave(loader_it),
                ds=g.checkpoint.CheckpointSave(ds_it),
            ),
        )
        # Read on before the (possibly asynchronous) save is done.
        after = {"loader": _read(loader_it, STEPS_AFTER), "ds": _read(ds_it, STEPS_AFTER)}
        mngr.wait_until_finished()
    return after


def restore_manager(g, directory):
    loader_it, ds_it = iterators(g)
    with ocp.CheckpointManager(directory) as mngr:
        restored = mngr.restore(
            mngr.latest_step(),
            args=ocp.args.Composite(
                params=ocp.args.StandardRestore(_params()),
                loader=g.checkpoint.CheckpointRestore(loader_it),
                ds=g.checkpoint.CheckpointRestore(ds_it),
            ),
        )
    assert restored["loader"] is loader_it and restored["ds"] is ds_it
    return {
        "params": {k: np.asarray(v).tolist() for k, v in restored["params"].items()},
        "loader": _read(loader_it, STEPS_AFTER),
        "ds": _read(ds_it, STEPS_AFTER),
    }


def save_v1(g, directory):
    v1 = ocp.experimental.v1
    loader_it, ds_it = iterators(g)
    _read(loader_it, STEPS_BEFORE)
    _read(ds_it, STEPS_BEFORE)
    response = v1.save_checkpointables_async(
        directory, {"params": _params(), "loader": loader_it, "ds": ds_it}
    )
    after = {"loader": _read(loader_it, STEPS_AFTER), "ds": _read(ds_it, STEPS_AFTER)}
    response.result()
    return after


def restore_v1(g, directory):
    v1 = ocp.experimental.v1
    loader_it, ds_it = iterators(g)
    restored = v1.load_checkpointables(
        directory, {"params": _params(), "loader": loader_it, "ds": ds_it}
    )
    assert restored["loader"] is loader_it and restored["ds"] is ds_it
    return {
        "params": {k: np.asarray(v).tolist() for k, v in restored["params"].items()},
        "loader": _read(loader_it, STEPS_AFTER),
        "ds": _read(ds_it, STEPS_AFTER),
    }


def main(action, lib, directory):
    if lib == "grain":
        import grain  # pylint: disable=import-outside-toplevel
        import grain.python  # noqa: F401  pylint: disable=import-outside-toplevel
    else:
        import spelt as grain  # pylint: disable=import-outside-toplevel
        import spelt.python  # noqa: F401  pylint: disable=import-outside-toplevel
    steps = {
        "save-manager": lambda: save_manager(grain, directory, async_=False),
        "save-manager-async": lambda: save_manager(grain, directory, async_=True),
        "restore-manager": lambda: restore_manager(grain, directory),
        "save-v1": lambda: save_v1(grain, directory),
        "restore-v1": lambda: restore_v1(grain, directory),
    }
    print(json.dumps(steps[action]()), flush=True)
    # Closed before the interpreter exits: an engine thread still reading ahead through a Python
    # map while the interpreter finalizes aborts the process (std::terminate when
    # PyGILState_Ensure ends the thread), an engine bug outside this test's subject.
    for it in _open_iterators:
        close = getattr(it, "close", None)
        if close is not None:
            close()


if __name__ == "__main__":
    main(*sys.argv[1:])
