"""Grain 0.2.18's two tree libraries, side by side with Spelt (tests/tree_cases.py): with JAX
importable (a subprocess) None is an empty subtree, dict keys come out sorted and registered
pytree nodes are traversed; with ``jax`` blocked (this process, tests/conftest.py) Grain's
fallback applies. Each case is batched (four faces), packed, spec'd, mixed or mapped by both
libraries and the outputs must be identical, types, dtypes, key order and numpy scalars
included."""

import subprocess
import sys

import numpy as np
import pytest

import grain
import pipelines
import spelt
from spelt import _tree
import tree_cases

CASES = tree_cases.cases()


@pytest.fixture(scope="module")
def with_jax():
    """tree_cases.py's report with JAX importable (JAX on its CPU platform)."""
    report = pipelines.run_json_script(tree_cases.__file__)
    report["cases"] = {name: (g, s) for name, g, s in report["cases"]}
    return report


def test_decides_like_grain(with_jax):
    assert not _tree.uses_jax()
    assert with_jax["uses_jax"]


@pytest.mark.parametrize("name", list(CASES))
def test_matches_grain_without_jax(name):
    fn = CASES[name]
    assert tree_cases._run(lambda: fn(spelt)) == tree_cases._run(lambda: fn(grain))


def test_matches_grain_with_jax(with_jax):
    assert with_jax["cases"].keys() == CASES.keys()
    assert [n for n, (g, s) in with_jax["cases"].items() if g != s] == []


def _spelt(report, name):
    return report["cases"][name][1]


def _keys(described):
    return [k for k, _ in described[1]]


@pytest.mark.parametrize("face", ["dataset_batch", "iter_batch", "loader_batch", "batch_operation"])
def test_jax_semantics_hold(with_jax, face):
    """What the comparison pins, stated directly (so a change in both libraries shows)."""
    assert _spelt(with_jax, f"{face}/none_leaf")[1][0] == ["label", ["NoneType", None]]
    assert _spelt(with_jax, f"{face}/none_then_int")[0] == "error"
    assert _keys(_spelt(with_jax, f"{face}/key_order")) == ["a", "b"]
    point = _spelt(with_jax, f"{face}/dataclass")
    assert point[0] == "Point"
    assert dict(point[1][1])["x"] == ["ndarray", "int64", [2, 2], [[0, 1], [1, 2]]]
    assert dict(point[1][1])["tag"] == ["str", "p"]
    pair = _spelt(with_jax, f"{face}/custom_node")
    assert pair[0] == "Pair" and dict(pair[1][1])["b"][1][0] == ["c", ["NoneType", None]]
    assert _spelt(with_jax, f"{face}/dataclass_static_differs")[0] == "error"
    assert _spelt(with_jax, f"{face}/namedtuple_vs_tuple")[0] == "error"
    assert _keys(_spelt(with_jax, f"{face}/ordered_dict")) == ["b", "a"]


@pytest.mark.parametrize("face", ["dataset_batch", "iter_batch", "loader_batch", "batch_operation"])
def test_plain_semantics_hold(face):
    assert list(CASES[f"{face}/key_order"](spelt)) == ["b", "a"]
    assert CASES[f"{face}/none_then_int"](spelt)["label"].dtype == object
    assert CASES[f"{face}/dataclass"](spelt).dtype == object
    assert isinstance(CASES[f"{face}/namedtuple_vs_tuple"](spelt), tree_cases.Labeled)


def test_packer_meta_features_are_numpy_scalars(with_jax):
    packed = CASES["pack_first_fit"](spelt)
    assert list(packed)[:3] == ["tokens", "inputs", "meta"]
    assert [type(m) for m in packed["meta"]] == [np.int64, np.int64]
    with_jax_packed = _spelt(with_jax, "pack_first_fit")
    assert _keys(with_jax_packed) == sorted(_keys(with_jax_packed))
    assert dict(with_jax_packed[1])["meta"] == ["list", [["int64", 7], ["int64", 8]]]


def test_mix_orders_dict_parents_as_grain_flattens(with_jax):
    assert CASES["mix_dict_parents"](spelt)[:2] == [100, 101]  # insertion order: zeta first
    assert _spelt(with_jax, "mix_dict_parents")[1][:2] == [["int", 0], ["int", 100]]  # sorted


def test_registered_nodes_flatten_once_per_element(with_jax):
    assert with_jax["flattens"] == 8


def test_workers_decide_as_their_consumer(with_jax):
    assert tree_cases.worker_batch_mismatches() == []  # jax blocked here, not in the worker
    assert with_jax["worker_mismatches"] == []


def test_an_import_hook_that_blocks_jax_means_plain_trees():
    script = (
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'jax':\n"
        "            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import numpy as np, spelt\n"
        "from spelt import _tree\n"
        "batch = spelt.MapDataset.source([{'b': 1, 'a': None}] * 2).batch(2)[0]\n"
        "print(_tree.uses_jax(), list(batch), batch['a'].tolist())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[0] == "False ['b', 'a'] [None, None]"
