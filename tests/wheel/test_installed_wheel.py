"""Checks of the installed wheel, run by `make test-wheel` (not by `make test`): the pytest suite
runs against the wheel in a new venv, inside tests/wheel/hide_system_codecs.sh, and these tests
check that it really does: spelt comes from that venv's site-packages, not from the source tree;
the system codecs are unreadable; and Spelt's extension modules load no shared library from
outside the venv except glibc's and libgcc_s (the libraries of the manylinux policy)."""

import ctypes
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import sysconfig

import pytest

import spelt

# The system libraries a manylinux wheel may load (PEP 600 / auditwheel's policy list).
_POLICY_LIBRARIES = (
    "libc.so",
    "libm.so",
    "libpthread.so",
    "libdl.so",
    "librt.so",
    "ld-linux",
    "libgcc_s.so",
)
_SOURCE_TREE = pathlib.Path(__file__).resolve().parents[2]


def _new_libraries(baseline: str, module: str) -> list[str]:
    """The shared-library files a fresh interpreter maps while it loads the extension module
    ``spelt.<module>`` from its file (without the package's __init__), after running
    ``baseline`` (read from /proc/self/maps)."""
    code = f"""
import glob, importlib.util, json, os
def mapped():
    with open("/proc/self/maps") as f:
        return {{line.split()[-1] for line in f if ".so" in line.split()[-1]}}
{baseline}
package = os.path.dirname(importlib.util.find_spec("spelt").origin)
path, = glob.glob(os.path.join(package, "{module}.*.so"))
spec = importlib.util.spec_from_file_location("spelt.{module}", path)
before = mapped()
spec.loader.exec_module(importlib.util.module_from_spec(spec))
print(json.dumps(sorted(mapped() - before)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _outside_venv(paths: list[str]) -> list[str]:
    prefix = str(pathlib.Path(sys.prefix).resolve())
    return [
        p
        for p in paths
        if not str(pathlib.Path(p).resolve()).startswith(prefix + os.sep)
        and not any(name in os.path.basename(p) for name in _POLICY_LIBRARIES)
    ]


def test_spelt_is_the_installed_wheel():
    site = pathlib.Path(sysconfig.get_paths()["platlib"]).resolve()
    assert pathlib.Path(spelt.__file__).resolve().is_relative_to(site)
    assert not any(pathlib.Path(p or ".").resolve() == _SOURCE_TREE / "python" for p in sys.path)
    direct_url = importlib.metadata.distribution("spelt-ml").read_text("direct_url.json")
    assert direct_url is None or '"editable": true' not in direct_url


def test_system_codecs_are_hidden():
    hidden = [p for p in os.environ.get("SPELT_HIDDEN_LIBRARIES", "").split(":") if p]
    names = " ".join(os.path.basename(p) for p in hidden)
    for codec in ("libzstd", "libbrotlienc", "libsnappy", "libisal", "libjpeg", "libwebp"):
        assert codec in names, f"{codec} is not hidden (run by make test-wheel): {hidden}"
    for path in hidden:
        with pytest.raises(OSError):
            ctypes.CDLL(path)


def test_auditwheel_reports_manylinux_2_28_or_older():
    """The glibc floor of every symbol is 2.28 or older, and the only library outside the wheel
    and the policy is pyarrow's libparquet/libarrow/libarrow_s3 (left out by design: docs/install.md)."""
    wheel = os.environ.get("SPELT_WHEEL", "")
    assert wheel.endswith(".whl"), "SPELT_WHEEL names the wheel (set by make test-wheel)"
    assert "manylinux_2_28_x86_64" in os.path.basename(wheel)
    out = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", "--json", wheel],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    glibc_floor = tuple(int(v) for v in report["sym_tag"].split("_")[1:3])
    assert report["sym_tag"].startswith("manylinux_") and glibc_floor <= (2, 28), report["sym_tag"]
    external = {name.split(".so")[0] for name in report["external_libs"]}
    assert external <= {"libparquet", "libarrow", "libarrow_s3"}, report["external_libs"]


def test_core_loads_no_system_library_but_glibc():
    new = _new_libraries("import numpy", "_core")
    assert any("_core" in p for p in new)
    print("spelt._core maps:", *new, sep="\n  ")
    assert _outside_venv(new) == []


def test_parquet_native_loads_no_system_library_but_glibc():
    new = _new_libraries("import numpy, pyarrow", "_parquet_native")
    assert any("_parquet_native" in p for p in new)
    assert _outside_venv(new) == []
