"""Grain's ``pick_performance_config`` and ``PerformanceConfig``: worker count and read-ahead
buffer sized from the elements' bytes and a RAM budget.

Semantics of Grain 0.2.18 (grain/_src/python/dataset/transformations/prefetch_autotune.py):
the average size of ``samples_to_check`` output elements gives the worker count
(``ram_budget_mb / size``, at most ``max_workers``, default the CPU count); the average size
of as many elements read from the parents of the ``to_iter_dataset`` stages gives the
prefetch buffer (``ram_budget_mb / (size x number of such stages)``, at most
``max_buffer_size``, default 1000). An element's size is the sum of its numpy arrays'
``nbytes`` and ``sys.getsizeof`` of its other leaves, through dicts, lists and tuples.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import os
import sys
from typing import Any

import numpy as np

from spelt import _base
from spelt import options as options_lib
from spelt.transformations import prefetch

_log = logging.getLogger(__name__)


@dataclasses.dataclass(slots=True)
class PerformanceConfig:
    """What ``pick_performance_config`` chose: ``multiprocessing_options`` (for
    ``mp_prefetch``) and ``read_options`` (for ``to_iter_dataset``); None when not set."""

    multiprocessing_options: options_lib.MultiprocessingOptions | None = None
    read_options: options_lib.ReadOptions | None = None


def _element_bytes(element: Any) -> int:
    if isinstance(element, dict):
        return sum(_element_bytes(v) for v in element.values())
    if isinstance(element, (list, tuple)):
        return sum(_element_bytes(v) for v in element)
    if isinstance(element, np.ndarray):
        return element.nbytes
    return sys.getsizeof(element)


def _average_element_mb(datasets: list[Any], samples_to_check: int) -> float:
    """Mean size (MiB) of ceil(samples / len(datasets)) first elements of each dataset; 0 when
    there are fewer than samples_to_check of them (with a warning, as Grain)."""
    if not datasets:
        return 0.0
    per_dataset = math.ceil(samples_to_check / len(datasets))
    elements = list(
        itertools.chain.from_iterable(itertools.islice(d, per_dataset) for d in datasets)
    )
    if len(elements) < samples_to_check:
        _log.warning("Warning: Not enough elements to sample.")
        return 0.0
    return float(np.mean([_element_bytes(e) for e in elements])) / (1024 * 1024)


def _prefetch_parents(ds: Any) -> list[Any]:
    """The MapDatasets read by the to_iter_dataset stages of ``ds`` (their elements are
    unbatched)."""
    if isinstance(ds, prefetch.PrefetchIterDataset):
        return [ds.parents[0]]
    return [p for parent in ds.parents for p in _prefetch_parents(parent)]


def pick_performance_config(
    ds: _base.IterDataset,
    *,
    ram_budget_mb: int | None,
    max_workers: int | None,
    max_buffer_size: int | None,
    samples_to_check: int = 5,
) -> PerformanceConfig:
    """A worker count and prefetch buffer size for ``ds`` that fit ``ram_budget_mb``.

    Args:
        ds: the pipeline; its first elements (and those of its to_iter_dataset parents) are
            read to measure their size.
        ram_budget_mb: RAM (MiB) that the buffered elements may take.
        max_workers: the most workers to pick (None: the CPU count).
        max_buffer_size: the largest prefetch buffer to pick (None: 1000).
        samples_to_check: elements to measure.

    Returns:
        ``PerformanceConfig(MultiprocessingOptions(num_workers=...),
        ReadOptions(prefetch_buffer_size=...))``. When too few elements could be read, the
        maximums (with a warning).

    Raises:
        TypeError: ``ram_budget_mb`` is None while elements were measured (as Grain).
    """
    if max_workers is None:
        max_workers = os.cpu_count() or 1
    element_mb = _average_element_mb([ds], samples_to_check)
    if element_mb <= 0:
        _log.warning("Warning: Average element size is zero. Defaulting to max workers.")
        num_workers = max_workers
    else:
        num_workers = min(int(ram_budget_mb / element_mb), max_workers)

    if max_buffer_size is None:
        max_buffer_size = 1000
    parents = _prefetch_parents(ds)
    element_mb = _average_element_mb(parents, samples_to_check)
    if element_mb <= 0:
        _log.warning("Warning: Average element size is zero. Defaulting to max threads.")
        buffer_size = max_buffer_size
    else:
        buffer_size = min(int(ram_budget_mb / (element_mb * len(parents))), max_buffer_size)
    return PerformanceConfig(
        multiprocessing_options=options_lib.MultiprocessingOptions(num_workers=num_workers),
        read_options=options_lib.ReadOptions(prefetch_buffer_size=buffer_size),
    )
