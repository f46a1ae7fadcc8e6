"""The distribution's name and version as pip sees them (PyPI "spelt" is another project)."""

import importlib.metadata
import subprocess
import sys

import spelt


def test_version_matches_package_metadata():
    assert spelt.__version__ == importlib.metadata.version("spelt-ml")


def test_cli_version_matches_package_metadata():
    out = subprocess.run(
        [sys.executable, "-m", "spelt", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"spelt {importlib.metadata.version('spelt-ml')}"
