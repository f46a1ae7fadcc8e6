"""Resources of a process tree, read from /proc (Linux; no psutil).

``tree_stats(pid)`` gives, for the process and each of its descendants (worker processes and
any helper processes they start), the resident set size and the number of open file
descriptors.
"""

from __future__ import annotations

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class ProcessStats:
    pid: int
    rss_bytes: int  # VmRSS: resident pages, shared ones (memfd arenas) counted in every process
    open_fds: int  # entries of /proc/<pid>/fd


def children(pid: int) -> list[int]:
    """Direct children of `pid` (all its threads' children); [] if it is gone."""
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def descendants(pid: int) -> list[int]:
    """All processes below `pid`, parents before their children."""
    out, frontier = [], [pid]
    while frontier:
        frontier = [c for p in frontier for c in children(p)]
        out += frontier
    return out


def process_stats(pid: int) -> ProcessStats | None:
    """RSS and open fds of `pid`, or None if it exited meanwhile."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss_kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None
    return ProcessStats(pid, rss_kib << 10, fds)


def tree_stats(pid: int) -> tuple[ProcessStats, list[ProcessStats]]:
    """(stats of `pid`, stats of each live descendant). REQUIRES: `pid` is alive."""
    root = process_stats(pid)
    if root is None:
        raise ProcessLookupError(pid)
    below = [s for s in map(process_stats, descendants(pid)) if s is not None]
    return root, below


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of `pid`, of its reaped children, and of its live descendants
    with theirs: what the tree has used so far (a descendant that exits unreaped is lost)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in [pid, *descendants(pid)]:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return total / ticks


def tree_memory(pid: int) -> tuple[int, int]:
    """(sum of VmRSS, sum of Pss) in bytes over `pid` and its live descendants. Pss divides each
    shared page between the processes that map it, so its sum is the tree's real footprint;
    the RSS sum counts shared pages (libraries, shared memory) once per process."""
    rss = pss = 0
    for p in [pid, *descendants(pid)]:
        stats = process_stats(p)
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                pss_kib = next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
        if stats is not None:
            rss += stats.rss_bytes
            pss += pss_kib << 10
    return rss, pss
