"""Read-ahead stages: ``MapDataset.to_iter_dataset`` (Grain's PrefetchIterDataset) and
``IterDataset.mp_prefetch`` (Grain's MultiprocessPrefetchIterDataset), from
grain/_src/python/dataset/transformations/prefetch.py at 0.2.18.

Both are the engine's ordered core (cpp/src/exec/ordered_iterator.cc): chunks of consecutive
global indices computed by an executor (the process-wide thread pool, or worker processes when
the MapDataset calls Python) and merged in index order. The state is ``{"next_index": n}``
whichever executor computes the elements.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

from spelt import _args
from spelt import _base
from spelt import _core
from spelt import options as options_lib

if TYPE_CHECKING:
    # The worker-process machinery is imported when the first worker stage is built, so that
    # `import spelt` stays cheap (docs/benchmarks.md, I1).
    from spelt._workers import autotune as autotune_lib
    from spelt._workers import keeper as keeper_lib


class PrefetchIterDataset(_base.ParentSpec, _base.IterDataset):
    """``parent.to_iter_dataset(read_options, allow_nones=...)``: ordered read-ahead of
    ``read_options.prefetch_buffer_size`` elements on ``read_options.num_threads`` threads,
    skipping Nones (filtered elements) unless ``allow_nones``. TypeError naming the field if
    ``num_threads`` or ``prefetch_buffer_size`` is not an int (Grain: an AssertionError when
    iterating)."""

    def __init__(
        self, parent: _base.MapDataset, read_options: options_lib.ReadOptions, allow_nones: bool
    ):
        super().__init__(parent)
        _args.int_fields(read_options, ("num_threads", "prefetch_buffer_size"))
        self.read_options = read_options
        self.allow_nones = allow_nones

    # Grain's attribute names (its tests and user code read them).
    @property
    def _read_options(self) -> options_lib.ReadOptions:
        return self.read_options

    @property
    def _allow_nones(self) -> bool:
        return self.allow_nones

    def _make_node(self):
        return self._parents[0].engine_node.to_iter(
            self.read_options.num_threads,
            self.read_options.prefetch_buffer_size,
            self.allow_nones,
        )

    def __str__(self) -> str:
        return (
            f"PrefetchIterDataset(read_options={self.read_options}, allow_nones={self.allow_nones})"
        )


class ProcessPrefetchIterDataset(PrefetchIterDataset):
    """``parent.to_iter_dataset()`` with the elements computed by worker processes.

    Its engine node is the ordered core with a worker-process executor
    (cpp/python/process_executor.cc): workers compute chunks of consecutive indices with their
    own copy of `parent` (once per chunk); the merge in index order and the state
    ``{"next_index": n}`` are those of to_iter_dataset. The workers belong to the node's
    PoolKeeper, which keeps them warm between iterators (docs/workers.md).
    """

    keeper_observer: Callable[[Any], Any] | None = None  # set on profiled copies (_summary.py)

    def __init__(
        self,
        parent: _base.MapDataset,
        read_options: options_lib.ReadOptions,
        allow_nones: bool,
        options: options_lib.MultiprocessingOptions,
        worker_init_fn: Callable[[int, int], None] | None,
        autotune: autotune_lib.Limits | None = None,
    ):
        super().__init__(parent, read_options, allow_nones)
        self.options = options
        self._worker_init_fn = worker_init_fn
        self._autotune = autotune
        self._keeper = self._new_keeper()

    def _new_keeper(self) -> keeper_lib.PoolKeeper | autotune_lib.TunedKeeper:
        """The stage's PoolKeeper (a TunedKeeper if autotuned). Shallow copies (the profiled
        twin of the execution summary) share it, so that tracked and untracked iterators lease
        the same warm pool."""
        # pylint: disable-next=import-outside-toplevel
        from spelt._workers import autotune as autotune_lib, keeper as keeper_lib

        if self._autotune is not None:
            return autotune_lib.TunedKeeper(
                self._parents[0], self._worker_init_fn, self._autotune, anchor=self
            )
        return keeper_lib.PoolKeeper(
            self._parents[0],
            self._worker_init_fn,
            self.options.num_workers,
            capacity=self.options.per_worker_buffer_size + 1,
            anchor=self,
        )

    def __copy__(self):
        twin = type(self).__new__(type(self))
        twin.__dict__.update(super().__getstate__())  # the keeper is shared
        return twin

    def __getstate__(self):
        state = super().__getstate__()
        del state["_keeper"]  # the workers are this process's: an unpickled copy has its own
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._keeper = self._new_keeper()

    def _make_node(self):
        parent, options = self._parents[0], self.options
        keeper = self._keeper
        if self.keeper_observer is not None:  # the execution summary counts worker time
            keeper = self.keeper_observer(keeper)
        buffer_size = options.per_worker_buffer_size
        if self._autotune is not None:  # chunks beyond what the pool sends wait in its queue
            buffer_size = self._autotune.max_buffer_size
        return _core.process_prefetch(
            parent.engine_node, keeper, self.allow_nones, options.num_workers, buffer_size
        )

    def __str__(self) -> str:
        tuned = "" if self._autotune is None else ", autotune=True"
        return (
            f"ProcessPrefetchIterDataset(num_workers={self.options.num_workers},"
            f" per_worker_buffer_size={self.options.per_worker_buffer_size}{tuned})"
        )


def replace_stages(ds: Any, replace: Callable[[PrefetchIterDataset], _base.IterDataset]) -> Any:
    """``ds`` with every to_iter_dataset stage below it replaced by ``replace(stage)``; the
    IterDatasets in between are copies over the new stages (``_base.rewrite``), so they run
    unchanged in this process, on top of the parallel stage."""

    def visit(node: Any, descend: Callable[[Any], Any]) -> Any:
        if isinstance(node, PrefetchIterDataset):  # ProcessPrefetchIterDataset too
            return replace(node)
        return descend(node) if isinstance(node, _base.IterDataset) else node

    return _base.rewrite(ds, visit)


def _parallel_stage(
    stage: PrefetchIterDataset,
    options: options_lib.MultiprocessingOptions,
    worker_init_fn: Callable[[int, int], None] | None,
    autotune: autotune_lib.Limits | None,
) -> _base.IterDataset:
    """A to_iter_dataset stage read in parallel: by worker processes if its MapDataset calls
    Python (its engine node calls_python()), else, since native work runs without the GIL, by at
    least num_workers threads (same output and state, fewer copies)."""
    parent = stage.parents[0]
    if parent.engine_node.calls_python():
        return ProcessPrefetchIterDataset(
            parent, stage.read_options, stage.allow_nones, options, worker_init_fn, autotune
        )
    if worker_init_fn is not None:
        warnings.warn(
            "mp_prefetch: the pipeline calls no Python before to_iter_dataset, so it is read with"
            " threads, not worker processes, and worker_init_fn is not called"
        )
    # The buffer is at least the thread count: a stage read in the calling thread
    # (RangeMapDataset's default prefetch_buffer_size=0) must not trip ReadOptions' warning
    # about a buffer smaller than the threads, which is for values the user set.
    num_threads = max(stage.read_options.num_threads, options.num_workers)
    threads = options_lib.ReadOptions(
        num_threads=num_threads,
        prefetch_buffer_size=max(stage.read_options.prefetch_buffer_size, num_threads),
    )
    return PrefetchIterDataset(parent, threads, stage.allow_nones)


def mp_prefetch(
    ds: _base.IterDataset,
    options: options_lib.MultiprocessingOptions | None,
    worker_init_fn: Callable[[int, int], None] | None,
    autotune: bool,
    ram_budget_mb: int | None,
) -> _base.IterDataset:
    """``IterDataset.mp_prefetch`` with worker processes (see its docstring): ``ds`` with each
    to_iter_dataset stage read in parallel. ValueError for a negative ``num_workers`` or a
    ``per_worker_buffer_size`` <= 0 (Grain's message); TypeError naming the argument for an
    option that is not an int, a ``worker_init_fn`` that is not callable or a ``ram_budget_mb``
    that is not a number."""
    _args.callable_arg(worker_init_fn, "mp_prefetch: worker_init_fn", optional=True)
    _args.number_arg(ram_budget_mb, "mp_prefetch: ram_budget_mb", optional=True)
    _args.options_arg(options, options_lib.MultiprocessingOptions, "mp_prefetch: options")
    if options is not None:
        _args.int_fields(options, ("num_workers", "per_worker_buffer_size"))
    limits = None
    if autotune:
        from spelt._workers import autotune as autotune_lib  # pylint: disable=import-outside-toplevel

        options, limits = autotune_lib.configure(options, ram_budget_mb)
    if options is None:
        options = options_lib.MultiprocessingOptions(num_workers=10)
    if options.num_workers < 0:
        raise ValueError(f"num_workers must be non-negative, got {options.num_workers}")
    if options.num_workers == 0:
        return ds
    if options.per_worker_buffer_size <= 0:
        raise ValueError(
            f"`buffer_size` must be greater than 0, got {options.per_worker_buffer_size}."
        )
    return replace_stages(ds, lambda stage: _parallel_stage(stage, options, worker_init_fn, limits))
