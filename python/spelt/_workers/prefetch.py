"""``mp_prefetch``: the pipeline with its ``to_iter_dataset`` stages read in parallel.

What runs in parallel is the MapDataset part of a pipeline, the per-index work below
``to_iter_dataset`` (source reads, map, random_map, filter, MapDataset.batch, ...). mp_prefetch
returns the same pipeline with each ``to_iter_dataset`` stage replaced:

* by a ProcessPrefetchIterDataset when its MapDataset calls Python (the engine node is
  serial): N worker processes compute chunks of indices, merged in index order (iterator.py);
* by the same stage with at least N read-ahead threads when it calls no Python, since native
  work runs without the GIL and threads give the same result for less.

Everything above that stage (IterDataset batch, map, filter, flat_map, ...) is rebuilt unchanged
on top and runs in the consumer, so the output, batch boundaries included, and the iterator
state ``{"next_index": n}`` are those of the pipeline without mp_prefetch, for any N.
"""

from __future__ import annotations

import copy
import functools
import warnings
from typing import Any, Callable

from spelt import _core
from spelt import dataset
from spelt import options as options_lib
from spelt._workers import iterator as iterator_lib
from spelt._workers import pickling
from spelt._workers import pool as pool_lib


class ProcessPrefetchIterDataset(dataset.IterDataset):
  """``parent.to_iter_dataset()`` with the elements computed by worker processes."""

  def __init__(
      self,
      parent: dataset.MapDataset,
      read_options: options_lib.ReadOptions,
      allow_nones: bool,
      options: options_lib.MultiprocessingOptions,
      worker_init_fn: Callable[[int, int], None] | None,
  ):
    super().__init__(parent)
    self._read_options = read_options
    self._allow_nones = allow_nones
    self._options = options
    self._worker_init_fn = worker_init_fn

  def _make_node(self):
    # The MapDataset is the node's parent for default seeds of later random transformations.
    return _core.python_iter_dataset(self, self._parents[0]._node)

  def __iter__(self) -> iterator_lib.ProcessPrefetchIterator:
    return iterator_lib.ProcessPrefetchIterator(
        self._start_pool,
        length=len(self._parents[0]),
        allow_nones=self._allow_nones,
        # One chunk being computed, the others ready: at least two per worker.
        chunks_per_worker=self._options.per_worker_buffer_size + 1,
    )

  def _start_pool(self) -> pool_lib.WorkerPool:
    # Pickled for each pool and not kept: for an in-memory source the pickle is as large as
    # the data.
    return pool_lib.WorkerPool(pickling.dumps(self._parents[0], "the pipeline"),
                               pickling.dumps(self._worker_init_fn, "worker_init_fn"),
                               self._options.num_workers)

  def __str__(self) -> str:
    return (
        f"ProcessPrefetchIterDataset(num_workers={self._options.num_workers},"
        f" per_worker_buffer_size={self._options.per_worker_buffer_size})"
    )


def mp_prefetch(
    ds: dataset.IterDataset,
    options: options_lib.MultiprocessingOptions | None,
    worker_init_fn: Callable[[int, int], None] | None,
) -> dataset.IterDataset:
  """IterDataset.mp_prefetch (see module doc). Grain's default: 10 workers."""
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
  return _replace_stages(ds, functools.partial(_parallel, options=options,
                                               worker_init_fn=worker_init_fn))


def _parallel(stage: Any, options: options_lib.MultiprocessingOptions,
              worker_init_fn: Callable[[int, int], None] | None) -> dataset.IterDataset:
  parent, read_options = stage._parents[0], stage._read_options  # pylint: disable=protected-access
  allow_nones = stage._allow_nones  # pylint: disable=protected-access
  if parent._node.serial():  # pylint: disable=protected-access
    return ProcessPrefetchIterDataset(parent, read_options, allow_nones, options, worker_init_fn)
  if worker_init_fn is not None:
    warnings.warn(
        "mp_prefetch: the pipeline calls no Python before to_iter_dataset, so it is read with"
        " threads, not worker processes, and worker_init_fn is not called"
    )
  n = options.num_workers
  threads = options_lib.ReadOptions(
      num_threads=max(read_options.num_threads, n),
      prefetch_buffer_size=max(read_options.prefetch_buffer_size, n),
  )
  return dataset._PrefetchIterDataset(parent, threads, allow_nones)  # pylint: disable=protected-access


def _replace_stages(ds: Any, replace: Callable[[Any], dataset.IterDataset]) -> Any:
  """`ds` with every to_iter_dataset stage below it replaced by replace(stage); the datasets in
  between are shallow copies with new parents (their engine nodes are rebuilt lazily)."""
  if isinstance(ds, (dataset._PrefetchIterDataset, ProcessPrefetchIterDataset)):  # pylint: disable=protected-access
    return replace(ds)
  if not isinstance(ds, dataset.IterDataset):
    return ds
  parents = tuple(_replace_stages(p, replace) for p in ds.parents)
  if all(new is old for new, old in zip(parents, ds.parents)):
    return ds
  rebuilt = copy.copy(ds)
  rebuilt._parents = parents  # pylint: disable=protected-access
  return rebuilt
