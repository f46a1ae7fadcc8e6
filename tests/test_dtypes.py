"""Leaves come out with numpy's canonical dtypes, as in Grain, on every path.

Arrays that the engine makes (batches, native sources) become numpy arrays whose dtype is the
one numpy itself uses for that size: Python ints and int64 give ``dtype.char == 'l'`` and
``dtype.type is np.int64`` on Linux x86_64 (not ``np.longlong``, char 'q', which prints the
same ``dtype.name`` but a different ``repr``). Each pipeline is run with Grain 0.2.18 and Spelt
and every leaf is compared by dtype char, dtype type and repr.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pipelines import timeout  # noqa: F401  (timeout: autouse fixture)

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))

DTYPES = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
]


def record(i):
    """Python scalars, and an array and a numpy scalar of every dtype (workers import it)."""
    i = int(i)
    out = {"int": i, "float": i / 2, "bool": i % 2 == 0}
    for t in DTYPES:
        out["array_" + np.dtype(t).name] = (np.arange(3) + i).astype(t)
        out["scalar_" + np.dtype(t).name] = t(i)
    return out


def _records(g):
    return g.MapDataset.range(8).map(record)


def _loader(g, worker_count):
    # Equal records: Grain's batches with workers hold other records than Spelt's (each Grain
    # worker batches its own round-robin slice; see docs/compatibility.md).
    return g.DataLoader(
        data_source=[record(3)] * 8,
        sampler=g.samplers.SequentialSampler(8, g.sharding.NoSharding()),
        operations=[g.transforms.Batch(4)],
        worker_count=worker_count,
    )


# name -> build(g): an iterable of the pipeline's elements with library g.
PATHS = {
    "MapDataset.batch": lambda g: list(_records(g).batch(4)),
    "0 workers": lambda g: _records(g).batch(4).to_iter_dataset(),
    "IterDataset.batch": lambda g: _records(g).to_iter_dataset().batch(4),
    "threads": lambda g: (
        g.MapDataset.range(8).batch(4).to_iter_dataset(g.ReadOptions(num_threads=4))
    ),
    "threads, MapDataset index": lambda g: [g.MapDataset.range(8).batch(4)[1]],
    "mp_prefetch native": lambda g: (
        g.MapDataset.range(8)
        .batch(4)
        .to_iter_dataset()
        .mp_prefetch(g.MultiprocessingOptions(num_workers=2))
    ),
    "mp_prefetch": lambda g: (
        _records(g).batch(4).to_iter_dataset().mp_prefetch(g.MultiprocessingOptions(num_workers=2))
    ),
    "DataLoader 0 workers": lambda g: _loader(g, 0),
    "DataLoader 2 workers": lambda g: _loader(g, 2),
}


# Grain's worker processes leave its multiprocessing resource tracker running in the process
# that used them, so Grain runs these paths in a subprocess.
GRAIN_IN_SUBPROCESS = {"mp_prefetch native", "mp_prefetch", "DataLoader 2 workers"}


def leaves(path, library):
    """[key, dtype char, dtype type name, repr] of every leaf of the pipeline's elements (Grain's
    worker paths return SharedMemoryArray, an ndarray subclass whose repr names it; Spelt returns
    plain ndarrays, so the repr is that of np.asarray of the leaf)."""
    g = __import__(library)
    it = iter(PATHS[path](g))
    try:
        elements = list(it)
    finally:
        if hasattr(it, "close"):
            it.close()  # stops worker processes now, not at garbage collection
    out = []
    for element in elements:
        for key, leaf in sorted(element.items()) if isinstance(element, dict) else [("", element)]:
            assert isinstance(leaf, np.ndarray), (library, key, type(leaf))
            leaf = np.asarray(leaf)
            out.append([key, leaf.dtype.char, leaf.dtype.type.__name__, repr(leaf)])
    return out


def _grain_leaves(path):
    if path not in GRAIN_IN_SUBPROCESS:
        return leaves(path, "grain")
    # A fresh interpreter finds jax (installed for orbax-checkpoint); Grain's mp_prefetch then
    # reads absl flags, which a program run by absl's app.run has parsed.
    code = (
        "from absl import flags; flags.FLAGS.mark_as_parsed()\n"
        "import json, sys, test_dtypes; print(json.dumps(test_dtypes.leaves(sys.argv[1], 'grain')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, path],
        cwd=TESTS_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("path", list(PATHS))
def test_dtypes_match_grain_and_numpy(path):
    spelt_leaves, grain_leaves = leaves(path, "spelt"), _grain_leaves(path)
    assert spelt_leaves
    for key, char, type_name, _ in spelt_leaves:
        canonical = np.dtype(np.dtype(char).name)
        assert (char, type_name) == (canonical.char, canonical.type.__name__), key
    assert spelt_leaves == grain_leaves


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_of_numpy_scalars_has_numpys_own_dtype(dtype):
    """np.int64 scalars batch to dtype.type np.int64 (not np.longlong), and so on."""
    import spelt  # pylint: disable=import-outside-toplevel

    batch = spelt.MapDataset.source([dtype(1), dtype(0)]).batch(2)[0]
    assert batch.dtype.type is np.dtype(dtype).type
    assert batch.dtype.char == np.dtype(dtype).char
    assert batch.dtype == np.dtype(dtype)
