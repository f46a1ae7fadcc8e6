"""python/spelt/_core.pyi describes the extension module as built (regenerate it with
`python -m nanobind.stubgen -m spelt._core -o python/spelt/_core.pyi` after changing bindings)."""

import pathlib
import subprocess
import sys

import spelt

_STUB = pathlib.Path(spelt.__file__).with_name("_core.pyi")


def test_stub_matches_the_built_module(tmp_path):
    out = tmp_path / "_core.pyi"
    subprocess.run(
        [sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "spelt._core", "-o", str(out)],
        check=True,
    )
    assert out.read_text() == _STUB.read_text(), (
        "python/spelt/_core.pyi is stale: regenerate it (see this test's docstring)"
    )


def test_engine_types_have_their_real_names():
    from spelt import _core  # pylint: disable=g-import-not-at-top

    for name in ("MapDataset", "IterDataset", "DatasetIterator", "Sampler"):
        assert getattr(_core, name).__name__ == name
