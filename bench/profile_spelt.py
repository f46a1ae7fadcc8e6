"""Runs Spelt's side of a bench case for many epochs, as a target for a sampling profiler.

    .venv/bin/python bench/profile_spelt.py -k DataLoader --epochs 40
    perf record -F 1000 --call-graph dwarf,16384 -- \\
        .venv/bin/python bench/profile_spelt.py --package /tmp/pkg -k DataLoader

Grain is not run. ``-k`` takes the first case of bench_mnist.CASES whose name contains it.
``--package DIR`` imports ``spelt`` from DIR/spelt (e.g. the sources with an unstripped
``_core`` build, since the installed one is stripped) instead of the editable install.
docs/benchmarks.md says what the profiles showed and how they were taken.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time


def _use_package(path: str) -> None:
    """Makes ``import spelt`` load DIR/spelt: scikit-build-core's editable finder sits in
    sys.meta_path ahead of sys.path, so it is removed first."""
    sys.meta_path[:] = [
        f for f in sys.meta_path if not type(f).__module__.startswith("_editable_skbc")
    ]
    sys.path.insert(0, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="DataLoader", help="first case whose name contains this")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--package", help="import spelt from this folder's spelt/")
    args = parser.parse_args()
    if args.package:
        _use_package(args.package)
    bench_mnist = importlib.import_module("bench_mnist")  # imports spelt: after _use_package
    print(f"spelt from {bench_mnist.spelt.__file__}")
    case = next((c for c in bench_mnist.CASES if args.k in c.name), None)
    if case is None:
        parser.error(f"no case name contains {args.k!r}")
    source = bench_mnist.MnistLikeSource()
    start = time.perf_counter()
    for _ in range(args.epochs):
        for _ in case.spelt(source):
            pass
    elapsed = time.perf_counter() - start
    print(
        f"{case.name}: {args.epochs} epochs, {args.epochs * len(source) / elapsed:,.0f} records/s"
    )


if __name__ == "__main__":
    main()
