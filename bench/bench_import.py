"""`import spelt` against `import grain`: wall time of a fresh interpreter that imports the
package, minus that of one that imports nothing, median of N alternating runs.

``python bench/bench_import.py [--runs 10]``. Grain is measured as its users run it, with jax
importable (Grain 0.2.18 imports jax when it can), and also with jax blocked
(``sys.modules["jax"] = None`` before the import). Imports nothing from other bench modules.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "nothing": "pass",
    "spelt": "import spelt",
    "grain (jax importable)": "import grain",
    "grain (jax blocked)": "import sys; sys.modules['jax'] = None; import grain",
    "spelt (jax blocked)": "import sys; sys.modules['jax'] = None; import spelt",
}


def _seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    for code in CASES.values():  # warm the file cache
        _seconds(code)
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.runs):
        for name, code in CASES.items():
            times[name].append(_seconds(code))
    base = statistics.median(times["nothing"])
    medians = {name: statistics.median(t) - base for name, t in times.items() if name != "nothing"}
    print(f"interpreter start-up (subtracted): {base * 1e3:.0f} ms, {args.runs} runs each")
    for name, value in medians.items():
        print(f"import {name:24s} {value * 1e3:7.0f} ms")
    for jax in ("jax importable", "jax blocked"):
        spelt_key = "spelt" if jax == "jax importable" else "spelt (jax blocked)"
        ratio = medians[spelt_key] / medians[f"grain ({jax})"]
        print(f"spelt / grain ({jax}): {ratio:.2f}")


if __name__ == "__main__":
    main()
