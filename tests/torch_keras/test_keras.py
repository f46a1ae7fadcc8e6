"""spelt.keras with real Keras 3 (`make test-keras`): fit, evaluate and predict over a
MapDataset, an IterDataset, a DataLoader, a repeated dataset with steps_per_epoch and an
iterator give the weights, losses and predictions of the same pipeline built with Grain 0.2.18;
a run killed at an epoch's end or within an epoch and resumed with spelt.keras.BackupAndRestore
ends with the weights of an uninterrupted run. Keras runs in fresh processes
(tests/torch_keras/keras_steps.py), with the JAX backend unless a test says otherwise."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest


STEPS = pathlib.Path(__file__).with_name("keras_steps.py")


def _run(*args, backend="jax", returncode=0):
    result = subprocess.run(
        [sys.executable, str(STEPS), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu"},
    )
    assert result.returncode == returncode, result.stderr[-3000:]
    if returncode:
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


def _assert_same_run(a, b):
    for wa, wb in zip(a["weights"], b["weights"], strict=True):
        assert np.array_equal(np.array(wa), np.array(wb)), (wa, wb)
    assert a["losses"] == b["losses"]
    assert a["evaluate"] == b["evaluate"] and a["predict"] == b["predict"]


@pytest.mark.parametrize(
    "kind,epochs,steps_per_epoch",
    [("map", 3, 0), ("iter", 3, 0), ("loader", 3, 0), ("stream", 3, 5)],
)
def test_training_on_spelt_is_training_on_grain(kind, epochs, steps_per_epoch):
    spelt_run = _run("spelt", kind, epochs, steps_per_epoch)
    grain_run = _run("grain", kind, epochs, steps_per_epoch)
    assert len(spelt_run["losses"]) == epochs
    assert len(spelt_run["predict"]) == 84  # every record of the map pipeline, once
    _assert_same_run(spelt_run, grain_run)
    assert spelt_run["losses"][-1] < spelt_run["losses"][0]  # it trained


def test_an_iterator_streams_across_epochs():
    """Keras builds the model on the first batch and trains on the following ones (as with a
    generator); epochs read on through the stream."""
    from_iterator = _run("spelt", "iterator", 3, 5)
    _assert_same_run(from_iterator, _run("grain", "stream-after-1", 3, 5))
    assert from_iterator["state"] == {"iterator": {"next_index": 16}}  # 1 + 3 * 5 batches


def test_the_torch_backend_trains_on_spelt_as_on_grain():
    _assert_same_run(
        _run("spelt", "map", 2, 0, backend="torch"), _run("grain", "map", 2, 0, backend="torch")
    )


_UNINTERRUPTED = {}


@pytest.fixture
def uninterrupted(tmp_path_factory):
    """A 4-epoch run with spelt.keras.BackupAndRestore, once per (kind, steps_per_epoch)."""

    def run(kind, steps_per_epoch):
        key = (kind, steps_per_epoch)
        if key not in _UNINTERRUPTED:
            backup = tmp_path_factory.mktemp("backup")
            _UNINTERRUPTED[key] = _run("spelt", kind, 4, steps_per_epoch, "spelt", backup)
        return _UNINTERRUPTED[key]

    return run


@pytest.mark.parametrize("kind,steps_per_epoch", [("stream", 5), ("iter", 0)])
@pytest.mark.parametrize("kill", ["1:end", "2:1"], ids=["after-epoch-1", "within-epoch-2"])
def test_a_resumed_run_trains_on_what_an_uninterrupted_one_does(
    kind, steps_per_epoch, kill, tmp_path, uninterrupted
):
    uninterrupted = uninterrupted(kind, steps_per_epoch)
    _run("spelt", kind, 4, steps_per_epoch, "spelt", tmp_path / "b", kill, returncode=17)
    positions = json.loads((tmp_path / "b" / "spelt_data_state.json").read_text())
    assert sorted(positions) == ["1", "2"]
    resumed = _run("spelt", kind, 4, steps_per_epoch, "spelt", tmp_path / "b")
    # Keras reports the losses of the epochs it ran: the resumed epochs' are the same
    assert resumed["losses"] == uninterrupted["losses"][-len(resumed["losses"]) :]
    assert len(resumed["losses"]) == 2
    _assert_same_run({**resumed, "losses": []}, {**uninterrupted, "losses": []})


def test_keras_backup_alone_replays_a_stream(tmp_path, uninterrupted):
    """Without the data position, the resumed stream starts over: other weights."""
    uninterrupted = uninterrupted("stream", 5)
    _run("spelt", "stream", 4, 5, "keras", tmp_path / "b", "1:end", returncode=17)
    resumed = _run("spelt", "stream", 4, 5, "keras", tmp_path / "b")
    assert resumed["weights"] != uninterrupted["weights"]
