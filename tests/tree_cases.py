"""Element trees that Grain 0.2.18 batches, packs, specs and mixes differently with and without
JAX (tests/test_jax_trees.py): each case runs on Grain and on Spelt in the same process and is
described as plain JSON data, so the two can be compared.

The test process blocks ``jax`` (tests/conftest.py), so there both libraries run as without
JAX. ``python tree_cases.py`` runs the cases with JAX importable; the last line printed is the
JSON of ``{"uses_jax": Spelt's decision, "flattens": registered-node flattens in Spelt's batch
of 8 elements (one node each), "worker_mismatches": worker_batch_mismatches(), "cases":
[[case, grain's description, spelt's description], ...]}``.
"""

import collections
import dataclasses
import json
from typing import Any, Callable

import grain
import grain.python
import numpy as np

import spelt
import spelt.python

try:
    from jax import tree_util
except ImportError:
    tree_util = None


@dataclasses.dataclass
class Point:
    """``jax.tree_util.register_dataclass``'d where JAX imports (``tag`` is static)."""

    x: Any
    y: Any
    tag: str = dataclasses.field(default="p", metadata={"static": True})


class Pair:
    """A node registered with ``register_pytree_node``, as flax's struct dataclasses are:
    children ``(b, a)`` (not attribute order), aux data ``name``."""

    def __init__(self, a: Any, b: Any, name: str = "pair"):
        self.a, self.b, self.name = a, b, name

    def __eq__(self, other: Any) -> bool:
        return type(other) is Pair and describe(vars(self)) == describe(vars(other))


Labeled = collections.namedtuple("Labeled", ["value", "label"])

if tree_util is not None:
    tree_util.register_dataclass(Point)
    tree_util.register_pytree_node(
        Pair, lambda p: ((p.b, p.a), p.name), lambda n, c: Pair(c[1], c[0], n)
    )


def describe(x: Any) -> Any:
    """``x`` as JSON data that keeps types, dtypes, shapes, key order and numpy scalars apart."""
    if isinstance(x, dict):
        return [type(x).__name__, [[str(k), describe(v)] for k, v in x.items()]]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [describe(v) for v in x]]
    if isinstance(x, np.ndarray):
        items = [describe(v) for v in x.ravel()] if x.dtype == object else x.tolist()
        return ["ndarray", str(x.dtype), list(x.shape), items]
    if isinstance(x, np.generic):
        return [type(x).__name__, x.item()]
    if isinstance(x, (Point, Pair)):
        return [type(x).__name__, describe(dict(sorted(vars(x).items())))]
    if isinstance(x, (spelt.experimental.ShapeDtypeStruct, grain.experimental.ShapeDtypeStruct)):
        return ["spec", list(x.shape), np.dtype(x.dtype).name]
    return [type(x).__name__, x]


def _points(tags: tuple[str, str] = ("p", "p")) -> list[Any]:
    return [Point(np.arange(2) + i, float(i), tag) for i, tag in enumerate(tags)]


# name -> elements to batch (two each).
BATCHES: dict[str, list[Any]] = {
    "none_leaf": [{"label": None, "x": 1}, {"label": None, "x": 2}],
    "none_then_int": [{"label": None}, {"label": 1}],
    "int_then_none": [{"label": 1}, {"label": None}],
    "key_order": [{"b": 1, "a": np.zeros(2)}, {"a": np.ones(2), "b": 2}],
    "nested": [
        {"z": {"y": np.arange(2), "x": (1, 2.5)}, "a": [np.zeros(3), None], "m": "s"},
        {"z": {"x": (3, 4.5), "y": np.arange(2)}, "a": [np.ones(3), None], "m": "t"},
    ],
    "dataclass": _points(),
    "dataclass_in_dict": [{"p": p, "id": i} for i, p in enumerate(_points())],
    "dataclass_static_differs": _points(("p", "q")),
    "custom_node": [
        Pair(np.arange(2), {"d": 1, "c": None}),
        Pair(np.arange(2), {"c": None, "d": 2}),
    ],
    "custom_node_in_list": [[Pair(1, 2), 3], [Pair(4, 5), 6]],
    "namedtuple": [Labeled(np.zeros(2), 1), Labeled(np.ones(2), 2)],
    "namedtuple_vs_tuple": [Labeled(1, 2), (3, 4)],
    "ordered_dict": [collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)],
    "default_dict": [
        collections.defaultdict(int, b=1, a=2),
        collections.defaultdict(int, b=3, a=4),
    ],
}


def _run(fn: Callable[[], Any]) -> Any:
    try:
        return describe(fn())
    except Exception as e:  # pylint: disable=broad-except
        return ["error", type(e).__name__]


def _loader_batch(lib: Any, elements: list[Any], worker_count: int = 0) -> Any:
    loader = lib.DataLoader(
        data_source=elements,
        sampler=lib.python.IndexSampler(
            len(elements), lib.python.NoSharding(), shuffle=False, num_epochs=1
        ),
        operations=[lib.python.Batch(len(elements))],
        worker_count=worker_count,
    )
    return next(iter(loader))


def worker_batch_mismatches() -> list[str]:
    """The cases whose Spelt DataLoader batch differs with a worker process from without (the
    consumer batches what the workers computed, with its own tree semantics)."""
    names = ["none_leaf", "key_order", "nested", "dataclass", "custom_node"]
    return [
        name
        for name in names
        if _run(lambda: _loader_batch(spelt, BATCHES[name], worker_count=1))
        != _run(lambda: _loader_batch(spelt, BATCHES[name]))
    ]


def _pack(lib: Any) -> Any:
    elements = [
        {"tokens": np.arange(3), "inputs": np.arange(3) + 10, "meta": np.int64(7)},
        {"tokens": np.arange(2), "inputs": np.arange(2) + 20, "meta": np.int64(8)},
    ]
    ds = lib.MapDataset.source(elements).to_iter_dataset()
    packed = lib.experimental.FirstFitPackIterDataset(
        ds, length_struct={"tokens": 5, "inputs": 5}, num_packing_bins=2, meta_features=("meta",)
    )
    return next(iter(packed))


def _spec(lib: Any) -> Any:
    class ToDict(lib.transforms.Map):
        def map(self, x):
            return {"b": np.zeros(2), "a": x, "n": None}

        def output_spec(self, s):
            return {"b": lib.experimental.ShapeDtypeStruct((2,), np.float64), "a": s, "n": None}

    ds = lib.MapDataset.range(4).map(ToDict()).batch(2, drop_remainder=True)
    return lib.experimental.get_element_spec(ds)


def _mix(lib: Any) -> Any:
    parents = {
        "zeta": lib.MapDataset.source([100, 101, 102]).to_iter_dataset(),
        "alpha": lib.MapDataset.source([0, 1, 2]).to_iter_dataset(),
    }
    return list(lib.IterDataset.mix(parents, {"zeta": 2.0, "alpha": 1.0}))


def _map_output(lib: Any) -> Any:
    return lib.MapDataset.range(2).map(lambda i: {"b": i, "a": Point(i, None)})[1]


def cases() -> dict[str, Callable[[Any], Any]]:
    """name -> fn(lib) giving what the library produces."""
    out: dict[str, Callable[[Any], Any]] = {}
    for name, elements in BATCHES.items():
        out[f"dataset_batch/{name}"] = lambda lib, e=elements: lib.MapDataset.source(e).batch(2)[0]
        out[f"iter_batch/{name}"] = lambda lib, e=elements: next(
            iter(lib.MapDataset.source(e).to_iter_dataset().batch(2))
        )
        out[f"loader_batch/{name}"] = lambda lib, e=elements: _loader_batch(lib, e)
        out[f"batch_operation/{name}"] = lambda lib, e=elements: (
            next(
                lib.python.BatchOperation(2)(
                    lib.python.Record(lib.python.RecordMetadata(index=i, record_key=i), x)
                    for i, x in enumerate(e)
                )
            ).data
        )
    out["pack_first_fit"] = _pack
    out["element_spec"] = _spec
    out["mix_dict_parents"] = _mix
    out["map_output"] = _map_output
    return out


def compare() -> list[list[Any]]:
    """[case, grain's description, spelt's description] for every case."""
    return [
        [name, _run(lambda: fn(grain)), _run(lambda: fn(spelt))] for name, fn in cases().items()
    ]


class Counted:
    """A registered node that counts its flattens (where JAX imports)."""

    flattens = 0

    def __init__(self, x: Any):
        self.x = x


def _count_flatten(node: Counted) -> tuple[tuple[Any], None]:
    Counted.flattens += 1
    return (node.x,), None


if tree_util is not None:
    tree_util.register_pytree_node(Counted, _count_flatten, lambda _, c: Counted(*c))


def flattens_per_batch() -> int:
    """How often Spelt flattens the registered nodes of a batch of 8 elements (one each)."""
    elements = [{"n": Counted({"a": np.full(3, i), "b": i}), "i": i} for i in range(8)]
    Counted.flattens = 0
    batch = spelt.MapDataset.source(elements).batch(8)[0]
    assert batch["n"].x["b"].tolist() == list(range(8))
    return Counted.flattens


if __name__ == "__main__":
    from spelt import _tree  # pylint: disable=ungrouped-imports

    report = {
        "uses_jax": _tree.uses_jax(),
        "flattens": flattens_per_batch(),
        "worker_mismatches": worker_batch_mismatches(),
        "cases": compare(),
    }
    print(json.dumps(report))
