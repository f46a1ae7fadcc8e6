"""`import spelt` leaves out what only some pipelines use, so that it stays well under Grain's
import time (docs/benchmarks.md, I1): pyarrow (Parquet), asyncio (Orbax v1 coroutines), jax,
Pillow (spelt.vision), the worker-process machinery (spelt._workers, multiprocessing), which
the first ``mp_prefetch`` stage imports, and spelt.experimental, imported on first use."""

import json
import subprocess
import sys

_LAZY = [
    "pyarrow",
    "asyncio",
    "jax",
    "PIL",
    "spelt._workers",
    "multiprocessing",
    "spelt.experimental",
]


def _loaded_after(code: str) -> dict[str, bool]:
    probe = (
        f"import json, sys\n{code}\nprint(json.dumps({{m: m in sys.modules for m in {_LAZY!r}}}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_import_spelt_leaves_out_optional_machinery():
    assert _loaded_after("import spelt") == {m: False for m in _LAZY}


def test_the_first_worker_stage_imports_the_worker_machinery():
    code = (
        "import spelt\n"
        "spelt.MapDataset.range(4).map(lambda x: x).to_iter_dataset().mp_prefetch(\n"
        "    spelt.MultiprocessingOptions(num_workers=1))"
    )
    loaded = _loaded_after(code)
    assert loaded["spelt._workers"] and loaded["multiprocessing"]


def test_spelt_experimental_is_imported_on_first_use():
    loaded = _loaded_after(
        "import spelt\n"
        "assert 'experimental' in dir(spelt)\n"
        "assert spelt.experimental.ElasticIterator.__name__ == 'ElasticIterator'\n"
        "from spelt import experimental"
    )
    assert loaded["spelt.experimental"]
