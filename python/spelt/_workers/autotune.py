"""Autotuning of a worker pool: ``mp_prefetch(..., autotune=True)``, ``DataLoader(autotune=True)``.

Beyond Grain 0.2.18, whose ``pick_performance_config`` (prefetch_autotune.py) picks a worker count
and buffer once, from element sizes, and whose ``autotune()`` (autotune.py) is a stub. Here the
pool starts one worker and the worker count and the per-worker buffer are then adapted under a
RAM budget while the iterator runs, from what the consumer measures per chunk (no thread of its
own, nothing per element). At the first chunk of a new pool, with the first worker started and
its memory and element size measured, it starts as many workers as there are usable CPUs (at
most the maximum) as fit the budget (``Tuner._size_pool``): climbing from one worker one window
at a time cost 17-26% of 2-3 s runs (A1, docs/benchmarks.md). Which worker computes a chunk,
and when, never changes the elements or the state: the ordered core merges chunks by index
(docs/workers.md).

Measured over windows of ``FIRST_WINDOW_SECONDS``, each next one twice as long up to
``WINDOW_SECONDS`` (the quantities of the execution summary's worker stage,
docs/observability.md, plus the CPU):

* the consumer's *wait share*: the time it spent blocked in ``take()`` for a chunk, over the
  window's wall time (the worker stage's wait share);
* the workers' *utilisation* (busy): their compute seconds (from the replies) over active
  workers x wall; and the shares of that wall time they spent on a CPU and waiting on a run
  queue for one (/proc/PID/schedstat);
* the machine's *spare CPUs*: idle CPU seconds (/proc/stat) over wall;
* the *rate*: elements taken per second; and the bytes per chunk;
* the pool's *memory*: the workers' PSS plus their shared-memory share again (the consumer maps
  each arena too and holds the other half of its pages), from /proc/PID/smaps_rollup.

Decisions, at most one per window, each kept only if it pays (hill climbing):

* over the budget: one less chunk in flight per worker, else park a worker;
* the workers waited for a CPU more than ``STARVED`` of their busy time and fewer than
  ``SPARE_CPUS`` CPUs were idle (with idle CPUs such waits are wake-up latency): the machine
  is oversubscribed, and what the window measured says more about the other jobs than about
  the settings: the worker count holds (parking a worker then only gave other jobs a larger
  share: A1), and a waiting consumer gets deeper buffers (they cost memory, not CPU, and
  smooth over the workers' turns on the CPUs);
* the consumer waits and the workers are busy (>= ``BUSY``): more workers (parked ones,
  else new processes), as many as the idle CPUs can run (one per CPU share of a worker, one
  from ``SPARE_CPUS`` x that share), or, if a worker is on a CPU at most ``LIGHT`` of the
  time (it sleeps on I/O: more cost the machine little, and such workers scale about
  linearly), twice as many; as many of them as the measured memory plus theirs fits the
  budget;
* the consumer waits and the workers are not busy (or starved): twice the chunks in flight
  per worker (the buffer), as far as it fits;
* the consumer never waits (< ``WAIT_LOW``) and the workers idle (< ``IDLE``): park a worker.

A parked worker gets no more chunks; its process stays (its memory too), to come back without a
restart. A growth must raise the rate by ``GAIN`` in the next window, a parking must not lower
it by as much, or it is undone and that kind of move is not tried again for ``BACKOFF``
windows. While an active worker is starting nothing is measured: a window begins when it is
ready. Each decision is logged at INFO on the ``spelt`` logger, each window at DEBUG. A
worker's chunks in memory, computed or being computed and not taken yet, are at most its
buffer + 1 (pool.py). Thread-safety: as the pool's, one lease (one consumer thread) at a time.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import time
import weakref
from typing import Any, Callable

from spelt import monitoring
from spelt import options as options_lib
from spelt._workers import keeper as keeper_lib
from spelt._workers import pool as pool_lib

_log = logging.getLogger("spelt")

WINDOW_SECONDS = 0.5
FIRST_WINDOW_SECONDS = 0.1  # the first window; each next one twice as long, up to WINDOW_SECONDS
MIN_CHUNKS = 4  # chunks taken in a window for it to count
WAIT_HIGH = 0.05
WAIT_LOW = 0.01
BUSY = 0.75
IDLE = 0.5
STARVED = 0.3  # workers that wait for a CPU this share of their busy time are starved
SPARE_CPUS = 0.5  # idle CPUs needed to try one more worker, per CPU a worker uses
LIGHT = 0.25  # a worker on a CPU less than this share of the time may start on a busy machine
GAIN = 0.05
BACKOFF = 10  # windows
DEFAULT_MAX_BUFFER_SIZE = 8
# A worker's memory while none is measured, on the high side: a worker handing over 1 MiB
# records measures 50-90 MiB (its PSS plus its arena pages, counted for both processes).
WORKER_MB_GUESS = 256
# The most bytes the engine puts in one chunk, unless one element is larger
# (process_executor.cc, ChunkSizer::kMaxBytes), and how many chunks' worth of memory a worker
# holds per chunk it may have outstanding, plus once more (its arena regions the consumer has
# not released yet, and the heap it computes a chunk in: 1 MiB records measured 38 MiB at the
# first chunk, 89 MiB later with 2 outstanding).
CHUNK_BYTES = 8 << 20
CHUNKS_PER_REQUEST = 2
NODE_NAME = "ProcessPrefetchIterDataset"  # the node named in spelt.monitoring's records


def configure(
    options: options_lib.MultiprocessingOptions | None, ram_budget_mb: int | None
) -> tuple[options_lib.MultiprocessingOptions, Limits]:
    """The options of an autotuned ``mp_prefetch(options, autotune=True, ram_budget_mb=...)``
    stage (num_workers: the most workers) and its Limits. ValueError on negative sizes or a
    budget <= 0."""
    options = options or options_lib.MultiprocessingOptions()
    if options.num_workers < 0 or options.per_worker_buffer_size < 0:
        raise ValueError(f"mp_prefetch: negative worker count or buffer size in {options}")
    if ram_budget_mb is not None and ram_budget_mb <= 0:
        raise ValueError(f"mp_prefetch: ram_budget_mb must be > 0, got {ram_budget_mb}")
    buffer_size = max(options.per_worker_buffer_size, 1)
    limits = Limits(
        max_workers=options.num_workers or pool_lib.usable_cpus(),
        max_buffer_size=max(buffer_size, DEFAULT_MAX_BUFFER_SIZE),
        buffer_size=buffer_size,
        ram_budget_mb=ram_budget_mb or default_ram_budget_mb(),
    )
    return dataclasses.replace(options, num_workers=limits.max_workers), limits


def default_ram_budget_mb() -> int:
    """Half of the memory available now (MemAvailable), as tf.data's autotuning does by default
    (Grain's own ``pick_performance_config`` takes the budget as a required argument)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024 // 2
    except OSError:
        pass
    return 4096


@dataclasses.dataclass(frozen=True)
class Limits:
    """The bounds of one autotuned stage: at most `max_workers` processes and
    `max_buffer_size` chunks ready per worker (starting at `buffer_size`), the pool's memory
    within `ram_budget_mb` MiB."""

    max_workers: int
    max_buffer_size: int
    buffer_size: int
    ram_budget_mb: float


@dataclasses.dataclass(frozen=True)
class Decision:
    """A change of the pool's settings (``TunedKeeper.history``): seconds since the lease
    began, the active workers and per-worker buffer after it, and why."""

    time_s: float
    workers: int
    buffer_size: int
    reason: str


def process_memory_bytes(pid: int) -> int:
    """PSS of `pid` plus its shared-memory PSS once more (see module doc); 0 if it is gone."""
    fields = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in ("Pss", "Pss_Shmem"):
                    fields[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError):
        return 0
    return fields.get("Pss", 0) + fields.get("Pss_Shmem", 0)


def _schedstat(pid: int) -> tuple[int, int]:
    """(ns on a CPU, ns waiting on a run queue) of `pid` (/proc/PID/schedstat); 0s if gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            on_cpu, queued = f.read().split()[:2]
        return int(on_cpu), int(queued)
    except (OSError, ValueError):
        return 0, 0


class SystemProbe:
    """What a Tuner reads from /proc (Linux): the pool's memory, its workers' CPU and run-queue
    time and the machine's idle CPU time (a parameter of Tuner, for tests)."""

    _TICK = 1 / os.sysconf("SC_CLK_TCK")

    def memory_bytes(self, pids: list[int]) -> int:
        return sum(process_memory_bytes(pid) for pid in pids)

    def run_seconds(self, pids: list[int]) -> tuple[float, float]:
        """Seconds the processes `pids` have been on a CPU, and waiting for one, so far."""
        stats = [_schedstat(pid) for pid in pids]
        return sum(s[0] for s in stats) / 1e9, sum(s[1] for s in stats) / 1e9

    def idle_seconds(self) -> float:
        """CPU seconds the machine's CPUs have been idle (idle + iowait) since boot."""
        try:
            with open("/proc/stat") as f:
                fields = f.readline().split()
            return (int(fields[4]) + int(fields[5])) * self._TICK
        except (OSError, ValueError, IndexError):
            return 0.0


@dataclasses.dataclass
class _Window:
    start: float
    ready: bool  # every active worker had started when the window began
    cpu: float  # the workers' seconds on a CPU when it began
    queued: float  # and waiting for one
    idle: float  # the machine's idle CPU seconds when it began
    chunks: int = 0
    elements: int = 0
    waited: float = 0.0
    busy: float = 0.0
    nbytes: int = 0


@dataclasses.dataclass(frozen=True)
class _Measures:
    """One window's figures (see module doc)."""

    rate: float  # elements/s
    wait_share: float  # of the consumer's time, blocked on a chunk
    busy: float  # the workers' compute time / (active workers x wall), wall clock
    cpu: float  # the workers' time on a CPU / (active workers x wall)
    queued: float  # the workers' time waiting for a CPU / (active workers x wall)
    spare: float  # idle CPUs on the machine
    chunk_bytes: float

    def __str__(self) -> str:
        return (
            f"waited {self.wait_share:.0%}, workers busy {self.busy:.0%}, on a CPU"
            f" {self.cpu:.0%}, waiting for one {self.queued:.0%}, {self.spare:.1f} CPUs idle,"
            f" {self.rate:.0f}/s"
        )


@dataclasses.dataclass
class _Trial:
    move: str  # "workers" or "buffer"
    previous: int  # the value before the change
    grew: bool
    rate: float  # elements/s before the change


class Tuner:
    """Measures one lease's chunks and adapts its pool (see module doc)."""

    def __init__(
        self,
        pool: pool_lib.WorkerPool,
        limits: Limits,
        history: collections.deque[Decision],
        clock: Callable[[], float] = time.perf_counter,
        probe: SystemProbe | None = None,
        size: bool = False,
    ):
        self._pool = pool
        self._limits = limits
        self._history = history
        self._clock = clock
        self._probe = probe or SystemProbe()
        self._size = size  # start more workers at the first chunk (see _size_pool)
        self._began = clock()
        self._window = self._new_window(self._began, ready=False)
        self._windows = 0  # measured so far
        self._trial: _Trial | None = None
        self._blocked: dict[str, int] = {}
        self.peak_memory_bytes = 0

    @property
    def window_seconds(self) -> float:
        """The length of the current window: FIRST_WINDOW_SECONDS, doubling each window up to
        WINDOW_SECONDS (the first settings are the likeliest to be wrong, and moves that pay
        there pay a lot)."""
        return min(WINDOW_SECONDS, FIRST_WINDOW_SECONDS * 2**self._windows)

    def _new_window(self, start: float, ready: bool) -> _Window:
        probe = self._probe
        return _Window(start, ready, *probe.run_seconds(self._pool.pids), probe.idle_seconds())

    def observe(self, count: int, waited_s: float, busy_s: float, nbytes: int) -> None:
        """One chunk taken: `count` elements, the consumer blocked `waited_s` for it, a worker
        computed it in `busy_s`, `nbytes` bytes. Decides at the end of each window."""
        if self._size:
            self._size = False
            self._size_pool(count, nbytes)
        w = self._window
        if not w.ready:  # a worker is starting: measure from the next chunk once all have
            if not self._pool.closed and self._pool.all_ready():
                self._window = self._new_window(self._clock(), ready=True)
            return
        w.chunks += 1
        w.elements += count
        w.waited += waited_s
        w.busy += busy_s
        w.nbytes += nbytes
        now = self._clock()
        if now - w.start < self.window_seconds or w.chunks < MIN_CHUNKS:
            return
        ready = not self._pool.closed and self._pool.all_ready()
        self._window = self._new_window(now, ready)
        if ready:  # else a worker was starting: the window says nothing
            self._windows += 1
            wall, active = now - w.start, self._pool.active_workers
            self._step(
                _Measures(
                    rate=w.elements / wall,
                    wait_share=w.waited / wall,
                    busy=w.busy / (active * wall),
                    cpu=(self._window.cpu - w.cpu) / (active * wall),
                    queued=(self._window.queued - w.queued) / (active * wall),
                    spare=(self._window.idle - w.idle) / wall,
                    chunk_bytes=w.nbytes / w.chunks,
                )
            )

    def _size_pool(self, count: int, nbytes: int) -> None:
        """At the first chunk of a new pool (one worker, started and measured): as many workers
        as there are usable CPUs, at most max_workers, as long as that many fit the budget,
        each counted as the first one's memory now plus CHUNKS_PER_REQUEST chunks per chunk it
        may have outstanding and once more, a chunk being CHUNK_BYTES or one element if larger.
        Starting them together (not one per window) keeps short runs from spending most of
        their time ramping up (A1); the windows that follow park those that do not pay."""
        pool, limits = self._pool, self._limits
        want = min(pool_lib.usable_cpus(), limits.max_workers)
        if pool.num_workers >= want:
            return
        first = self._probe.memory_bytes(pool.pids) / pool.num_workers
        chunk = max(CHUNK_BYTES, nbytes / max(count, 1))
        per_worker = first + CHUNKS_PER_REQUEST * (pool.capacity + 1) * chunk
        fits = int(limits.ram_budget_mb * 2**20 // per_worker)
        workers = max(pool.num_workers, min(want, fits))
        if workers > pool.num_workers:
            self._set(
                "workers",
                workers,
                f"a first worker measured {first / 2**20:.0f} MiB: {workers} of"
                f" {per_worker / 2**20:.0f} MiB fit {limits.ram_budget_mb:.0f} MiB,"
                f" {pool_lib.usable_cpus()} CPUs",
            )

    # Decisions.
    def _step(self, m: _Measures) -> None:
        for move in list(self._blocked):
            self._blocked[move] -= 1
            if self._blocked[move] <= 0:
                del self._blocked[move]
        pool, limits = self._pool, self._limits
        monitoring.record_autotune_node_throughput(NODE_NAME, m.rate)
        memory = self._probe.memory_bytes(pool.pids)
        self.peak_memory_bytes = max(self.peak_memory_bytes, memory)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug(
                "spelt autotune: window ending at %.2f s, %d workers, buffer %d, %.0f MiB: %s",
                self._clock() - self._began,
                pool.active_workers,
                pool.capacity - 1,
                memory / 2**20,
                m,
            )
        if self._trial is not None:
            self._judge(self._trial, m.rate)
            return
        budget = limits.ram_budget_mb * 2**20
        # The workers wait for CPUs (the machine is oversubscribed): their number holds.
        starved = m.queued > STARVED * m.busy and m.spare < SPARE_CPUS
        if memory > budget:
            if pool.capacity > 1:
                self._set("buffer", pool.capacity - 1, f"over the RAM budget ({m})")
            elif pool.active_workers > 1:
                self._set("workers", pool.active_workers - 1, f"over the RAM budget ({m})")
        elif m.wait_share > WAIT_HIGH and m.busy >= BUSY and not starved:  # workers too few
            per_worker = m.chunk_bytes * pool.capacity
            if pool.active_workers == pool.num_workers:  # a new process
                per_worker += memory / pool.num_workers if memory else WORKER_MB_GUESS * 2**20
            active = pool.active_workers
            light = m.cpu <= LIGHT
            if light:  # workers sleeping on I/O scale about linearly: double them
                step = active
            else:  # as many as the idle CPUs can run
                step = int(m.spare / max(m.cpu, 1e-3) + 1 - SPARE_CPUS)
            step = min(step, int((budget - memory) // per_worker), limits.max_workers - active)
            if step >= 1:
                self._try_workers(active + step, m)
        elif m.wait_share > WAIT_HIGH:  # idle or starved workers, a waiting consumer: buffers
            buffer = pool.capacity - 1  # doubled, as far as it fits
            fits = (budget - memory) // max(m.chunk_bytes * pool.active_workers, 1)
            step = int(min(max(buffer, 1), limits.max_buffer_size - buffer, fits))
            if step >= 1 and "buffer" not in self._blocked:
                self._try("buffer", pool.capacity + step, m)
        elif m.wait_share < WAIT_LOW and m.busy < IDLE and not starved:  # too many workers
            self._try_workers(pool.active_workers - 1, m)

    def _try_workers(self, value: int, m: _Measures) -> None:
        if value >= 1 and "workers" not in self._blocked:
            self._try("workers", value, m)

    def _judge(self, trial: _Trial, rate: float) -> None:
        self._trial = None
        kept = rate >= trial.rate * (1 + GAIN) if trial.grew else rate >= trial.rate * (1 - GAIN)
        if not kept:
            reason = f"undone: {rate:.0f}/s against {trial.rate:.0f}/s"
            self._set(trial.move, trial.previous, reason)
            self._blocked[trial.move] = BACKOFF

    def _try(self, move: str, value: int, m: _Measures) -> None:
        previous = self._value(move)
        self._set(move, value, str(m))
        self._trial = _Trial(move, previous, value > previous, m.rate)

    def _value(self, move: str) -> int:
        return self._pool.active_workers if move == "workers" else self._pool.capacity

    def _set(self, move: str, value: int, reason: str) -> None:
        pool = self._pool
        if move == "buffer":
            pool.capacity = value
        else:
            while pool.num_workers < value:
                pool.add_worker()
            pool.active_workers = value
        self.record(reason)

    def record(self, reason: str) -> None:
        """Adds the pool's current settings to the history, the log and spelt.monitoring."""
        pool = self._pool
        decision = Decision(
            self._clock() - self._began, pool.active_workers, pool.capacity - 1, reason
        )
        self._history.append(decision)
        monitoring.record_autotune_parameter(NODE_NAME, "num_workers", decision.workers)
        monitoring.record_autotune_parameter(
            NODE_NAME, "per_worker_buffer_size", decision.buffer_size
        )
        _log.info(
            "spelt autotune: %d workers, buffer %d (%s)",
            decision.workers,
            decision.buffer_size,
            reason,
        )


class TunedKeeper:
    """A PoolKeeper (keeper.py) whose leases are autotuned: the interface of
    process_executor.cc (``acquire() -> lease``). A warm pool keeps the settings its last
    iterator reached. ``history`` holds the last decisions (``Decision``), ``tuner`` the
    Tuner of the latest lease."""

    def __init__(
        self,
        dataset: Any,
        worker_init_fn: Callable[[int, int], None] | None,
        limits: Limits,
        anchor: Any,
    ):
        self.limits = limits
        self._keeper = keeper_lib.PoolKeeper(
            dataset,
            worker_init_fn,
            1,  # more at its first chunk, as many as fit (Tuner._size_pool)
            capacity=limits.buffer_size + 1,
            anchor=anchor,
            max_workers=limits.max_workers,
        )
        self.history: collections.deque[Decision] = collections.deque(maxlen=256)
        self.tuner: Tuner | None = None
        self._sized: weakref.WeakSet[pool_lib.WorkerPool] = weakref.WeakSet()

    def acquire(self) -> _TunedLease:
        lease = self._keeper.acquire()
        fresh = lease.pool not in self._sized
        self._sized.add(lease.pool)  # a warm pool keeps the settings it reached
        self.tuner = Tuner(lease.pool, self.limits, self.history, size=fresh)
        self.tuner.record("started")
        return _TunedLease(lease, self.tuner)


class _TunedLease:
    def __init__(self, lease: keeper_lib.Lease, tuner: Tuner):
        self._lease = lease
        self._tuner = tuner

    def submit(self, begin: int, count: int, batching: tuple | None = None) -> _TunedTicket:
        # The tuner counts elements: a chunk of batches holds count * batch_size of them.
        elements = count if batching is None else count * batching[1]
        return _TunedTicket(self._lease.submit(begin, count, batching), elements, self._tuner)

    def close(self) -> None:
        self._lease.close()


class _TunedTicket:
    def __init__(self, ticket: pool_lib.Ticket, count: int, tuner: Tuner):
        self._ticket = ticket
        self._count = count
        self._tuner = tuner

    def take(self) -> tuple[Any, BaseException | None, float, int]:
        start = time.perf_counter()
        reply = self._ticket.take()
        self._tuner.observe(self._count, time.perf_counter() - start, reply[2], reply[3])
        return reply
