"""Checkpoint / resume: every transformation and the DataLoader, restored in a new process.

For each pipeline of tests/pipelines.py the iterator is read to the end while its state is
saved after every element (k = 0 .. end). One fresh interpreter (a single subprocess for the
whole module) rebuilds each pipeline, restores every saved state and reads the remainder,
which must equal the original run's remainder exactly, and whose state right after restoring
must equal the saved one.
"""

import copy
import json

import grain
import numpy as np
import pytest

import pipelines
from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt

ALL = [("dataset", n) for n in pipelines.DATASET_PIPELINES] + [
    ("loader", n) for n in pipelines.LOADER_PIPELINES
]


def _spec(kind, name):
    table = pipelines.DATASET_PIPELINES if kind == "dataset" else pipelines.LOADER_PIPELINES
    return table[name]


@pytest.fixture(scope="module")
def runs():
    """(kind, name) -> (outputs, states) of a spelt run with states saved after every step."""
    result = {}
    for kind, name in ALL:
        spec = _spec(kind, name)
        result[(kind, name)] = pipelines.run_with_states(iter(spec["build"](spelt)), spec["limit"])
    return result


@pytest.fixture(scope="module")
def restored(runs, tmp_path_factory):
    requests = [
        {"kind": kind, "name": name, "states": list(enumerate(states))}
        for (kind, name), (_, states) in runs.items()
    ]
    return pipelines.restore_in_new_process(requests, str(tmp_path_factory.mktemp("ckpt")))


@pytest.mark.parametrize("kind,name", ALL, ids=[f"{k}-{n}" for k, n in ALL])
def test_restore_in_new_process(kind, name, runs, restored):
    outputs, states = runs[(kind, name)]
    assert outputs, "pipeline produced nothing"
    status, detail = restored[(kind, name)]
    assert status == "ok", detail
    assert [k for k, _, _ in detail] == list(range(len(outputs) + 1))
    for k, restored_state, rest in detail:
        assert restored_state == states[k], f"state after restoring at step {k}"
        assert len(rest) == len(outputs) - k, f"restored at step {k}"
        for j, (got, want) in enumerate(zip(rest, outputs[k:])):
            try:
                pipelines.assert_same(got, want)
            except AssertionError as e:
                raise AssertionError(f"restored at step {k}: element {k + j} differs") from e


@pytest.mark.parametrize("kind,name", ALL, ids=[f"{k}-{n}" for k, n in ALL])
def test_states_are_json(kind, name, runs):
    _, states = runs[(kind, name)]
    for state in states:
        if kind == "loader":
            assert isinstance(state, bytes)
            decoded = json.loads(state)
            assert isinstance(decoded, dict)
            assert json.dumps(decoded, indent=4).encode() == state
        else:
            assert isinstance(state, dict)
            assert json.loads(json.dumps(state)) == state


@pytest.mark.parametrize("kind,name", ALL, ids=[f"{k}-{n}" for k, n in ALL])
def test_rewind_and_skip_on_one_iterator(kind, name, runs):
    """set_state on a used (even exhausted) iterator moves it backwards and forwards."""
    outputs, states = runs[(kind, name)]
    spec = _spec(kind, name)
    n = len(outputs)
    it = iter(spec["build"](spelt))
    pipelines.take(it, spec["limit"])
    for k in [n, 0, n // 2, 1, n, n - 1, n // 3, 0]:
        it.set_state(states[k])
        rest = pipelines.take(it, None if spec["limit"] is None else spec["limit"] - k)
        assert len(rest) == n - k
        pipelines.assert_same(rest, outputs[k:])


FINITE = [(k, n) for k, n in ALL if _spec(k, n)["limit"] is None]


@pytest.mark.parametrize("kind,name", FINITE, ids=[f"{k}-{n}" for k, n in FINITE])
def test_exhausted_iterator_stays_exhausted(kind, name, runs):
    outputs, _ = runs[(kind, name)]
    it = iter(_spec(kind, name)["build"](spelt))
    assert len(list(it)) == len(outputs)
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)
    # The state at the end (which may have skipped filtered elements past the last output)
    # restores to an exhausted iterator.
    restored = iter(_spec(kind, name)["build"](spelt))
    restored.set_state(it.get_state())
    assert list(restored) == []


GRAIN_COMPARABLE = [(k, n) for k, n in ALL if _spec(k, n)["grain_equal"]]


@pytest.mark.parametrize(
    "kind,name", GRAIN_COMPARABLE, ids=[f"{k}-{n}" for k, n in GRAIN_COMPARABLE]
)
def test_outputs_and_states_match_grain(kind, name, runs):
    outputs, states = runs[(kind, name)]
    spec = _spec(kind, name)
    grain_outputs, grain_states = pipelines.run_with_states(
        iter(spec["build"](grain)), spec["limit"]
    )
    pipelines.assert_same(outputs, grain_outputs)
    if spec["grain_state_equal"]:
        assert states == grain_states


def test_flat_map_loader_state_matches_grain_as_json(runs):
    # Grain writes the raw dataset state for a DataLoader with FlatMap.
    _, states = runs[("loader", "flat_map")]
    _, grain_states = pipelines.run_with_states(
        iter(pipelines.LOADER_PIPELINES["flat_map"]["build"](grain)), None
    )
    assert [json.loads(s) for s in states] == [json.loads(s) for s in grain_states]


def test_flat_map_loader_state_bytes_match_grain(runs):
    _, states = runs[("loader", "flat_map")]
    _, grain_states = pipelines.run_with_states(
        iter(pipelines.LOADER_PIPELINES["flat_map"]["build"](grain)), None
    )
    assert states == grain_states


def test_dataset_state_key_order_matches_grain():
    def build(g):
        return g.MapDataset.range(5).to_iter_dataset().random_map(lambda x, rng: x, seed=1)

    g_it, s_it = iter(build(grain)), iter(build(spelt))
    next(g_it), next(s_it)
    assert json.dumps(s_it.get_state()) == json.dumps(g_it.get_state())


# ---------------------------------------------------------------------------------------------
# assert_equal_output_after_checkpoint


@pytest.mark.parametrize("kind,name", FINITE, ids=[f"{k}-{n}" for k, n in FINITE])
def test_assert_equal_output_after_checkpoint_passes(kind, name):
    ds = _spec(kind, name)["build"](spelt)
    spelt.experimental.assert_equal_output_after_checkpoint(ds)


@pytest.mark.parametrize(
    "name", ["shuffle", "long_chain", "flat_map_batch", "custom_iter_dataset", "native_threads"]
)
def test_grains_checker_accepts_spelt_pipelines(name):
    # Grain's own checker restores at every step and compares the restored state too.
    grain.experimental.assert_equal_output_after_checkpoint(
        pipelines.DATASET_PIPELINES[name]["build"](spelt)
    )


BROKEN = {
    "forgetful": lambda g: pipelines.user_classes(g).Forgetful(9),
    "forgetful_under_ops": lambda g: (
        pipelines.user_classes(g).Forgetful(9).map(lambda x: x + 1).filter(lambda x: x % 3 != 0)
    ),
    "forgetful_under_random_map": lambda g: (
        pipelines.user_classes(g).Forgetful(9).random_map(lambda x, rng: x, seed=1)
    ),
    "off_by_one": lambda g: pipelines.user_classes(g).OffByOne(9),
    "off_by_one_batched": lambda g: pipelines.user_classes(g).OffByOne(9).batch(2),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_assert_equal_output_after_checkpoint_fails_for_broken_iterator(name):
    ds = BROKEN[name](spelt)
    with pytest.raises(AssertionError):
        spelt.experimental.assert_equal_output_after_checkpoint(ds)
    # Grain's checker agrees that these are broken.
    with pytest.raises(AssertionError):
        grain.experimental.assert_equal_output_after_checkpoint(BROKEN[name](grain))


# ---------------------------------------------------------------------------------------------
# DataLoader states across libraries and worker counts.


def _loader(g, worker_count=0):
    return pipelines._loader(
        g,
        shuffle=True,
        num_epochs=2,
        seed=5,
        worker_count=worker_count,
        ops=("map", "random_map", "filter", "batch3"),
    )


@pytest.mark.parametrize("k", [0, 1, 3, 8])
def test_grain_loader_state_restores_in_spelt_and_back(k):
    g_it = iter(_loader(grain))
    pipelines.take(g_it, k)
    g_state = g_it.get_state()
    g_rest = list(g_it)

    s_it = iter(_loader(spelt))
    s_it.set_state(g_state)
    pipelines.assert_same(list(s_it), g_rest)

    s_it = iter(_loader(spelt))
    pipelines.take(s_it, k)
    s_state = s_it.get_state()
    assert s_state == g_state
    g_it2 = iter(_loader(grain))
    g_it2.set_state(s_state)
    pipelines.assert_same(list(g_it2), g_rest)


def test_grain_dataset_state_restores_in_spelt():
    build = pipelines.DATASET_PIPELINES["long_chain"]["build"]
    g_it = iter(build(grain))
    pipelines.take(g_it, 6)
    state = copy.deepcopy(g_it.get_state())
    g_rest = list(g_it)
    s_it = iter(build(spelt))
    s_it.set_state(state)
    pipelines.assert_same(list(s_it), g_rest)


@pytest.mark.parametrize("saved_with,restored_with", [(0, 3), (3, 0), (2, 5)])
def test_loader_state_restores_with_another_worker_count(saved_with, restored_with):
    # Documented Spelt behaviour: the state is a global position, independent of workers.
    full = list(_loader(spelt, saved_with))
    for k in (0, 2, 5, len(full)):
        it = iter(_loader(spelt, saved_with))
        pipelines.take(it, k)
        state = it.get_state()
        it2 = iter(_loader(spelt, restored_with))
        it2.set_state(state)
        pipelines.assert_same(list(it2), full[k:])
    pipelines.assert_same(full, list(_loader(spelt, 0)))


def test_worker_count_state_layout():
    it = iter(_loader(spelt, 3))
    initial = json.loads(it.get_state())
    assert initial["worker_count"] == 3
    assert initial["last_seen_indices"] == {"0": -3, "1": -2, "2": -1}
    assert initial["last_worker_index"] == -1
    g_initial = json.loads(iter(_loader(grain, 0)).get_state())
    assert g_initial["last_seen_indices"] == {"0": -1}
    assert json.loads(iter(_loader(spelt, 0)).get_state()) == g_initial
    np.testing.assert_equal(len(list(it)), len(list(_loader(spelt, 0))))
