"""Execution summary: per-stage counters of a running pipeline, as a structure and a table.

Tracking is off by default and costs nothing then. It is on for an iterator made while
``spelt.config.py_debug_mode`` is true, or of a pipeline whose options (``WithOptionsIterDataset``)
ask for ``ExecutionTrackingMode.STAGE_TIMING``, or of a ``DataLoader(enable_profiling=True)``,
as in Grain 0.2.18 (grain/_src/python/dataset/stats.py). ``iter()`` then runs a *profiled
twin* of the pipeline: the same datasets (shallow copies) whose engine nodes are wrapped by
``_core.profiled_map`` / ``_core.profiled_iter`` (cpp/src/exec/stage_stats.cc), which count
elements, time and bytes per stage without changing elements or states. Stages that run in
worker processes (below ``mp_prefetch``) are listed but not counted; the worker stage reports
the workers' busy time instead (from the chunk replies). In debug mode the summary is logged
every ``REPORTING_PERIOD_S`` seconds while the iterator lives, as Grain does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
import time
import weakref
from typing import Any, Iterator

from spelt import _base
from spelt import _config
from spelt import _core
from spelt import _remote_reads
from spelt import dataset_options
from spelt.transformations import prefetch
from spelt.transformations import thread_prefetch

REPORTING_PERIOD_S = 5.0
_log = logging.getLogger("spelt")


@dataclasses.dataclass(frozen=True)
class StageSummary:
    """One stage of a pipeline.

    Attributes:
        id: the stage's number; 0 is the output stage, parents have higher numbers.
        name: the dataset's name, e.g. ``"MapMapDataset"``.
        inputs: ids of the parent stages.
        kind: ``"engine"`` (a C++ stage), ``"python"`` (a user's dataset class),
            ``"prefetch"`` (reads its parent ahead on other threads or processes) or
            ``"workers"`` (``mp_prefetch``: the stages below run in worker processes).
        in_workers: the stage runs in worker processes, so its counters here are empty.
        elements: elements produced (int).
        total_time_ns: time in the stage's calls, its parents' calls on the same thread
            included, summed over threads (int, ns).
        self_time_ns: ``total_time_ns`` less the parents' calls on the same thread (int, ns);
            for a prefetch stage, mostly the wait for its buffer.
        bytes_out: bytes of the arrays and strings of the elements produced (int).
        parallelism: threads or worker processes that run the stage (int, >= 1).
        worker_busy_s: for ``"workers"``: the workers' compute seconds (float), else None.
        worker_utilization: for ``"workers"``: busy seconds / (workers x wall seconds),
            in [0, 1], else None.
        filtered: for a map or filter (one element out per element in, or none): the elements
            it dropped, its input's elements less its own (a filter's, a map's None, a
            ``DecodeImage(on_error="skip")``'s corrupt images) (int); None for other stages.
    """

    id: int
    name: str
    inputs: tuple[int, ...]
    kind: str
    in_workers: bool
    elements: int
    total_time_ns: int
    self_time_ns: int
    bytes_out: int
    parallelism: int
    worker_busy_s: float | None = None
    worker_utilization: float | None = None
    filtered: int | None = None

    @property
    def wait_share(self) -> float:
        """Share of the stage's time spent waiting on its parents, in [0, 1]: the time in its
        parents' calls, or for a prefetch or worker stage its own (waiting) time."""
        if self.total_time_ns <= 0:
            return 0.0
        if self.kind in ("prefetch", "workers"):
            waiting = self.self_time_ns
        else:
            waiting = self.total_time_ns - self.self_time_ns
        return min(max(waiting / self.total_time_ns, 0.0), 1.0)

    # The field names of Grain's ExecutionSummary.Node (grain/proto/execution_summary.proto).
    num_produced_elements = property(lambda self: self.elements)
    total_processing_time_ns = property(lambda self: self.total_time_ns)
    bytes_produced = property(lambda self: self.bytes_out)
    wait_time_ratio = property(lambda self: self.wait_share)
    is_prefetch = property(lambda self: self.kind in ("prefetch", "workers"))
    is_output = property(lambda self: self.id == 0)

    @property
    def busy_ns(self) -> float:
        """The stage's own work per thread (ns): self time over parallelism, or for the
        worker stage the workers' busy time over their number. 0 for prefetch stages."""
        if self.kind == "workers":
            return (self.worker_busy_s or 0.0) * 1e9 / self.parallelism
        if self.kind == "prefetch" or self.in_workers:
            return 0.0
        return self.self_time_ns / self.parallelism


@dataclasses.dataclass(frozen=True)
class ExecutionSummary:
    """Per-stage counters of one iterator, from its creation until the summary was taken.

    Attributes:
        wall_time_s: seconds since the iterator was made (float).
        stages: the stages, output first (``StageSummary``).
        remote_reads: reads of remote files (object stores) made by this process while the
            iterator lived (``spelt._remote_reads.Stats``: requests, bytes, retries, requests
            in flight), or None if there were none. Reads in worker processes are not counted.
    """

    wall_time_s: float
    stages: tuple[StageSummary, ...]
    remote_reads: _remote_reads.Stats | None = None

    @property
    def output(self) -> StageSummary:
        return self.stages[0]

    @property
    def nodes(self) -> dict[int, StageSummary]:
        """The stages by id (the ``nodes`` map of Grain's ExecutionSummary proto)."""
        return {s.id: s for s in self.stages}

    @property
    def consumer_wait_share(self) -> float:
        """Share of the wall time the consumer spent in ``next()``, waiting for data."""
        if self.wall_time_s <= 0:
            return 0.0
        return min(self.output.total_time_ns / 1e9 / self.wall_time_s, 1.0)

    @property
    def bottleneck(self) -> StageSummary | None:
        """The stage with the most own work per thread (``StageSummary.busy_ns``); None
        before any work."""
        busiest = max(self.stages, key=lambda s: s.busy_ns)
        return busiest if busiest.busy_ns > 0 else None

    def bottleneck_line(self) -> str:
        """One line naming the bottleneck stage and how much the consumer waited."""
        waited = f"the consumer waited {self.consumer_wait_share:.0%} of {self.wall_time_s:.2f} s"
        stage = self.bottleneck
        if stage is None:
            return f"Bottleneck: none measured yet ({waited})"
        per_element = stage.busy_ns * stage.parallelism / max(stage.elements, 1) / 1e3
        total = sum(s.busy_ns for s in self.stages)
        return (
            f"Bottleneck: stage {stage.id} {stage.name} ({stage.busy_ns / total:.0%} of the"
            f" pipeline's work, {per_element:.1f} us per element); {waited}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain JSON-compatible data."""
        return {
            "wall_time_s": self.wall_time_s,
            "consumer_wait_share": self.consumer_wait_share,
            "bottleneck": None if self.bottleneck is None else self.bottleneck.id,
            "stages": [{**dataclasses.asdict(s), "wait_share": s.wait_share} for s in self.stages],
            "remote_reads": None
            if self.remote_reads is None
            else dataclasses.asdict(self.remote_reads),
        }

    def table(self) -> str:
        """The bottleneck line, then one row per stage (Grain's summary columns)."""
        header = (
            "id",
            "name",
            "inputs",
            "elements",
            "filtered",
            "total ms",
            "self ms",
            "us/elem",
            "wait %",
            "MiB out",
            "threads",
            "worker util",
        )
        rows = [header]
        for s in self.stages:
            if s.in_workers:
                counted = ("(in workers)", "", "", "", "", "", "", "")
            else:
                counted = (
                    str(s.elements),
                    "" if s.filtered is None else str(s.filtered),
                    f"{s.total_time_ns / 1e6:.1f}",
                    f"{s.self_time_ns / 1e6:.1f}",
                    f"{s.self_time_ns / max(s.elements, 1) / 1e3:.1f}",
                    f"{s.wait_share:.0%}",
                    f"{s.bytes_out / 2**20:.3f}",
                    str(s.parallelism),
                )
            util = "" if s.worker_utilization is None else f"{s.worker_utilization:.0%}"
            name = s.name if len(s.name) <= 60 else s.name[:57] + "..."
            rows.append((str(s.id), name, ",".join(map(str, s.inputs)), *counted, util))
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = [self.bottleneck_line()]
        for r in rows:
            lines.append(" | ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        lines.insert(2, "-+-".join("-" * w for w in widths))
        if self.remote_reads is not None:
            lines.append(self.remote_reads.line())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


class _WorkerTime:
    """Busy seconds and bytes reported by the workers of one mp_prefetch stage (summed over the
    chunk replies; updated by the consumer thread, read by any)."""

    def __init__(self):
        self.seconds = 0.0
        self.bytes = 0


class _CountingKeeper:
    """A PoolKeeper whose leases count the workers' seconds and bytes of each chunk taken."""

    def __init__(self, keeper: Any, time: _WorkerTime):
        self._keeper = keeper
        self._time = time

    def acquire(self) -> Any:
        return _CountingLease(self._keeper.acquire(), self._time)


class _CountingLease:
    def __init__(self, lease: Any, time: _WorkerTime):
        self._lease = lease
        self._time = time

    def submit(self, begin: int, count: int, batching: Any = None) -> Any:
        return _CountingTicket(self._lease.submit(begin, count, batching), self._time)

    def close(self) -> None:
        self._lease.close()


class _CountingTicket:
    def __init__(self, ticket: Any, time: _WorkerTime):
        self._ticket = ticket
        self._time = time

    def take(self) -> Any:
        elements, error, seconds, nbytes = self._ticket.take()
        self._time.seconds += seconds
        self._time.bytes += nbytes
        return elements, error, seconds, nbytes


@dataclasses.dataclass(eq=False)
class _Stage:
    name: str
    kind: str
    in_workers: bool
    parallelism: int
    inputs: list[_Stage] = dataclasses.field(default_factory=list)
    stats: Any = None  # _core.StageStats
    elementwise: bool = False  # a map or filter: each input element gives one or none
    workers: _WorkerTime | None = None


class Tracker:
    """The stages of one profiled pipeline and the clock of its iterator."""

    def __init__(self, output: _Stage | None):
        self.stages: list[_Stage] = []  # output first, then depth-first
        self._ids: dict[int, int] = {}
        todo = [output] if output is not None else []
        while todo:
            stage = todo.pop()
            if id(stage) in self._ids:
                continue
            self._ids[id(stage)] = len(self.stages)
            self.stages.append(stage)
            todo.extend(reversed(stage.inputs))
        self.start = time.perf_counter()
        self.remote_start = _remote_reads.stats()

    def summary(self) -> ExecutionSummary:
        wall = time.perf_counter() - self.start
        out = []
        counters_of = {
            id(st): st.stats.snapshot() if st.stats is not None else {} for st in self.stages
        }
        for i, st in enumerate(self.stages):
            counters = counters_of[id(st)]
            filtered = None
            if st.elementwise and len(st.inputs) == 1 and not st.in_workers:
                taken = counters_of[id(st.inputs[0])].get("elements", 0)
                filtered = max(taken - counters.get("elements", 0), 0)
            busy = util = None
            if st.workers is not None:
                busy = st.workers.seconds
                util = min(busy / (st.parallelism * wall), 1.0) if wall > 0 else 0.0
            out.append(
                StageSummary(
                    id=i,
                    name=st.name,
                    inputs=tuple(self._ids[id(p)] for p in st.inputs),
                    kind=st.kind,
                    in_workers=st.in_workers,
                    elements=counters.get("elements", 0),
                    total_time_ns=counters.get("total_ns", 0),
                    self_time_ns=counters.get("self_ns", 0),
                    bytes_out=counters.get("bytes", 0),
                    parallelism=st.parallelism,
                    worker_busy_s=busy,
                    worker_utilization=util,
                    filtered=filtered,
                )
            )
        remote = _remote_reads.stats().since(self.remote_start)
        return ExecutionSummary(
            wall_time_s=wall, stages=tuple(out), remote_reads=remote if remote.requests else None
        )


# The attribute that marks the profiled twin of a dataset (its stages are already counted).
_PROFILED = "_spelt_profiled"
_collectors: list[list[Tracker]] = []  # the trackers made during each collecting() block


@contextlib.contextmanager
def collecting() -> Iterator[list[Tracker]]:
    """Within the block every new Dataset iterator tracks stages; yields the list of their
    trackers, filled as they are made (``spelt profile``). Not thread-safe to nest."""
    trackers: list[Tracker] = []
    _collectors.append(trackers)
    try:
        yield trackers
    finally:
        _collectors.remove(trackers)


def tracking_enabled(ds: Any) -> bool:
    """Whether ``iter(ds)`` tracks stages: debug mode, or STAGE_TIMING in the pipeline's
    options. False for a profiled twin itself (its stages are already counted)."""
    if getattr(ds, _PROFILED, False):
        return False
    if _collectors or _config.config.py_debug_mode:
        return True
    node = ds
    while node is not None:
        if isinstance(node, _base.WithOptionsIterDataset):
            mode = node.merged_options.execution_tracking_mode
            return mode == dataset_options.ExecutionTrackingMode.STAGE_TIMING
        parents = getattr(node, "parents", ())
        node = parents[0] if len(parents) == 1 else None
    return False


def _kind(ds: Any) -> str:
    if isinstance(ds, prefetch.ProcessPrefetchIterDataset):
        return "workers"
    if isinstance(ds, prefetch.PrefetchIterDataset):
        return "prefetch" if not ds.parents[0].engine_node.calls_python() else "engine"
    if isinstance(ds, thread_prefetch.ThreadPrefetchIterDataset):
        return "prefetch"
    module = type(ds).__module__ or ""
    return "engine" if module.startswith("spelt.") else "python"


def _name(ds: Any) -> str:
    name = str(ds)
    return type(ds).__name__ if name.startswith("<") else name  # not the default object repr


def _twin(ds: Any, in_workers: bool, threads: int) -> tuple[Any, _Stage | None]:
    """A shallow copy of ``ds`` whose engine node (and its parents', recursively) is profiled,
    and its stage. A pass-through dataset (whose node is its parent's, or one that says it
    makes no iterator of its own in Grain, ``_no_stage``: WithOptionsIterDataset, seed()) is
    copied but has no stage of its own: it returns its parent's."""
    if not isinstance(ds, (_base.MapDataset, _base.IterDataset)):
        return ds, None
    kind = _kind(ds)
    stage = _Stage(_name(ds), kind, in_workers, 1 if in_workers else threads)
    stage.elementwise = isinstance(ds, _base.TransformStr)
    parent_threads = threads
    if kind == "workers":
        stage.parallelism = ds.options.num_workers
        stage.workers = _WorkerTime()
    elif kind == "prefetch" and isinstance(ds, prefetch.PrefetchIterDataset):
        parent_threads = max(ds.read_options.num_threads, 1)
    elif isinstance(ds, prefetch.PrefetchIterDataset):
        parent_threads = 1  # calls Python: the consumer's thread computes the elements
    parents = []
    for p in ds.parents:
        parent_twin, parent_stage = _twin(p, in_workers or kind == "workers", parent_threads)
        parents.append(parent_twin)
        if parent_stage is not None:
            stage.inputs.append(parent_stage)
    twin = _base.with_parents(ds, parents)
    setattr(twin, _PROFILED, True)
    if kind == "workers":
        twin.keeper_observer = functools.partial(_CountingKeeper, time=stage.workers)
    node = twin.engine_node
    if parents and (
        getattr(ds, "_no_stage", False) or node is getattr(parents[0], "_node_cache", None)
    ):
        return twin, (stage.inputs[0] if stage.inputs else None)
    stage.stats = _core.StageStats()
    wrap = _core.profiled_map if isinstance(ds, _base.MapDataset) else _core.profiled_iter
    twin.engine_node = wrap(node, stage.stats)
    return twin, stage


def tracked_iterator(ds: Any) -> Any:
    """``iter(ds)`` tracking stages (:func:`profiled_iterator`) when tracking is on
    (:func:`tracking_enabled`), else None: ``IterDataset.__iter__`` then makes the plain one."""
    return profiled_iterator(ds) if tracking_enabled(ds) else None


def profiled_iterator(ds: Any) -> Any:
    """``iter()`` of the profiled twin of ``ds``, with its Tracker as ``_spelt_tracker``; in
    debug mode a thread logs the summary every REPORTING_PERIOD_S seconds while it lives."""
    twin, stage = _twin(ds, in_workers=False, threads=1)
    tracker = Tracker(stage)
    for trackers in _collectors:
        trackers.append(tracker)
    # Through the profiled node, so that a Python dataset on top (custom __iter__) is counted.
    it = _base.EngineDatasetIterator(_base.engine_iterator(twin), twin, tracker)
    tracker.start = time.perf_counter()
    if _config.config.py_debug_mode:
        _start_reporting(it, tracker)
    return it


def _start_reporting(it: Any, tracker: Tracker) -> None:
    alive = weakref.ref(it)

    def report():
        while alive() is not None:
            time.sleep(REPORTING_PERIOD_S)
            if alive() is None:
                return
            _log.info("Grain Dataset Execution Summary:\n%s", tracker.summary().table())

    threading.Thread(target=report, daemon=True, name="spelt-execution-summary").start()


def execution_summary(iterator: Any) -> ExecutionSummary:
    """The execution summary of an iterator made with tracking on (a Dataset iterator or a
    DataLoader iterator). ValueError if tracking was off when it was made."""
    tracker = getattr(iterator, "_spelt_tracker", None)
    if tracker is None:
        inner = getattr(iterator, "_iterator", None)  # a DataLoaderIterator
        tracker = getattr(inner, "_spelt_tracker", None)
    if tracker is None:
        raise ValueError(
            "execution_summary: this iterator does not track stages; make it with"
            ' spelt.config.update("py_debug_mode", True), DataLoader(enable_profiling=True) or'
            " DatasetOptions(execution_tracking_mode=ExecutionTrackingMode.STAGE_TIMING)"
        )
    return tracker.summary()
