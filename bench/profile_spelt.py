"""Runs Spelt's side of bench cases for many epochs, as a target for a sampling profiler.

    .venv/bin/python bench/profile_spelt.py -k DataLoader --epochs 40
    perf record -g -- .venv/bin/python bench/profile_spelt.py -k DataLoader
    py-spy record --native -o profile.svg -- .venv/bin/python bench/profile_spelt.py

Grain is not run. ``-k`` takes the first case whose name contains the pattern; see
docs/benchmarks.md for what the profiles showed.
"""

from __future__ import annotations

import argparse
import time

import bench


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("-k", default="DataLoader", help="first case whose name contains this")
  parser.add_argument("--epochs", type=int, default=40)
  args = parser.parse_args()
  case = next(c for c in bench.CASES if args.k in c.name)
  source = bench.MnistLikeSource()
  start = time.perf_counter()
  for _ in range(args.epochs):
    for _ in case.spelt(source):
      pass
  elapsed = time.perf_counter() - start
  print(f"{case.name}: {args.epochs} epochs, "
        f"{args.epochs * len(source) / elapsed:,.0f} records/s")


if __name__ == "__main__":
  main()
