"""Splits a perf profile of bench/profile_spelt.py into the cost buckets of docs/benchmarks.md.

    perf script -F ip,sym -i perf.data | python3 bench/perf_buckets.py

Needs call graphs (``perf record --call-graph dwarf``) and an unstripped ``_core``. Only
samples inside the iterator's ``next()`` count; each goes to the bucket of the innermost
frame (walking from the leaf) that matches a rule, GIL and allocator time included in the
bucket that caused it. Those two are also reported across buckets.
"""

from __future__ import annotations

import collections
import sys
from typing import Iterable, Iterator

# (bucket, frame substrings); rules are tried in order on each frame, leaf first.
BUCKETS = [
    ("source __getitem__ (user Python)", ["slot_mp_subscript"]),
    (
        "Python -> engine conversion (ToValue)",
        ["spelt::python::ToValue", "FromNumpy", "PyOpaque::Unpack"],
    ),
    ("batch stacking (Stacker)", ["Stacker::", "spelt::Stack"]),
    ("engine -> Python conversion (ToPython)", ["spelt::python::ToPython", "ArrayToPython"]),
    ("record release (Value / PyObject refs)", ["~Value", "_M_release", "PyDecref", "~vector"]),
    ("sampler (IndexShuffle, RecordKey)", ["IndexShuffle", "RecordKey", "ShuffleNode::Get"]),
    ("engine, other (GIL around reads, wrappers)", ["spelt::"]),
]
OUTSIDE = "Python / nanobind around next()"
INSIDE_NEXT = ("nb_func_vectorcall", "Iterator::Next")
GIL = (
    "take_gil",
    "drop_gil",
    "PyGILState",
    "pthread_mutex",
    "pthread_cond",
    "lll_mutex",
    "PyEval_RestoreThread",
    "PyEval_SaveThread",
    "_PyThreadState_Swap",
)
ALLOCATOR = ("malloc", "_int_free", "free (inlined)", "malloc_consolidate", "unlink_chunk")


def samples(lines: Iterable[str]) -> Iterator[list[str]]:
    """Call stacks (leaf first, symbol names) from ``perf script -F ip,sym`` output."""
    stack: list[str] = []
    for line in lines:
        fields = line.split(None, 1)
        if fields:
            stack.append(fields[1].strip() if len(fields) > 1 else "")
        elif stack:
            yield stack
            stack = []
    if stack:
        yield stack


def bucket(stack: list[str]) -> str:
    for frame in stack:
        for name, needles in BUCKETS:
            if any(n in frame for n in needles):
                return name
    return OUTSIDE


def main() -> None:
    inside = [s for s in samples(sys.stdin) if any(k in f for f in s for k in INSIDE_NEXT)]
    if not inside:
        sys.exit("no samples inside next(): record with --call-graph dwarf and an unstripped _core")
    counts = collections.Counter(bucket(s) for s in inside)

    def share(n: int) -> str:
        return f"{100 * n / len(inside):5.1f}%"

    print(f"{len(inside)} samples inside next()")
    for name, n in counts.most_common():
        print(f"{share(n)}  {name}")
    for label, needles, depth in (("GIL and mutexes", GIL, 4), ("malloc/free", ALLOCATOR, 3)):
        n = sum(1 for s in inside if any(k in f for f in s[:depth] for k in needles))
        print(f"{share(n)}  across buckets: {label}")


if __name__ == "__main__":
    main()
