"""Grain's ``grain.experimental`` names that Spelt provides."""

from __future__ import annotations

import copy
from typing import Any

from spelt import _core
from spelt._combine import LimitIterDataset, RepeatIterDataset, ZipIterDataset, ZipMapDataset
from spelt._plot import plot_execution_summary
from spelt._summary import ExecutionSummary, StageSummary
from spelt._summary import execution_summary as get_execution_summary
from spelt.array_record import ArrayRecordWriter
from spelt.dataset import FlatMapIterDataset, apply_transformations, get_next_index, set_next_index
from spelt.dataset_options import DatasetOptions, ExecutionTrackingMode, WithOptionsIterDataset
from spelt.device_put import device_put
from spelt.element_spec import ShapeDtypeStruct, ShapeDtypeStructProtocol, get_element_spec
from spelt.huggingface import HuggingFaceIterDataset
from spelt.packing import (
    BestFitPackIterDataset,
    BOSHandling,
    ConcatThenSplitIterDataset,
    FirstFitPackIterDataset,
    PackAndBatchOperation,
)
from spelt.parquet import ParquetIterDataset
from spelt.parquet_source import ParquetDataSource
from spelt.performance_config import PerformanceConfig, pick_performance_config
from spelt.rng_pool import RngPool
from spelt.thread_prefetch import ThreadPrefetchDatasetIterator, ThreadPrefetchIterDataset
from spelt.tfrecord import TFRecordDataSource, TFRecordIterDataset, TFRecordWriter
from spelt.transforms import FlatMap as FlatMapTransform
from spelt.transforms import MapWithIndex as MapWithIndexTransform


def index_shuffle(index: int, max_index: int, seed: int, rounds: int = 4) -> int:
    """Position of index in a pseudo-random permutation of [0, max_index].

    Bit-exact with Grain's index_shuffle, except that Spelt's is a permutation for every
    max_index (Grain's is not when max_index is a power of two 2^k, k even >= 16).
    Raises ValueError for index outside [0, max_index], seed outside [0, 2**32), rounds
    odd or outside [4, 1024].
    """
    return _core.index_shuffle(index, max_index, seed, rounds)


def _checkpoint_points(n: int) -> list[int]:
    return sorted({0, 1, n // 3, n // 2, (2 * n) // 3, max(n - 1, 0), n})


def assert_equal_output_after_checkpoint(ds: Any) -> None:
    """Asserts that restoring a checkpoint resumes ``ds`` exactly.

    Iterates ``ds`` once to the end, then for several positions k (including 0 and the end)
    iterates k elements, saves ``get_state()``, and checks that a fresh iterator restored from
    a deep copy of that state yields exactly the remaining elements. Raises AssertionError
    naming the first position and element that differ.
    """
    import numpy as np  # pylint: disable=import-outside-toplevel

    def equal(a: Any, b: Any) -> bool:
        try:
            np.testing.assert_equal(a, b)
            return True
        except AssertionError:
            return False

    expected = list(ds)
    for k in _checkpoint_points(len(expected)):
        it = iter(ds)
        for _ in range(k):
            next(it)
        state = copy.deepcopy(it.get_state())
        restored = iter(ds)
        restored.set_state(state)
        rest = list(restored)
        if len(rest) != len(expected) - k:
            raise AssertionError(
                f"after restoring at element {k}: got {len(rest)} elements, expected"
                f" {len(expected) - k}"
            )
        for j, (a, b) in enumerate(zip(rest, expected[k:])):
            if not equal(a, b):
                raise AssertionError(
                    f"after restoring at element {k}: element {k + j} differs: {a!r} != {b!r}"
                )


__all__ = [
    "ArrayRecordWriter",
    "BOSHandling",
    "BestFitPackIterDataset",
    "ConcatThenSplitIterDataset",
    "DatasetOptions",
    "ExecutionSummary",
    "ExecutionTrackingMode",
    "FirstFitPackIterDataset",
    "FlatMapIterDataset",
    "FlatMapTransform",
    "HuggingFaceIterDataset",
    "LimitIterDataset",
    "MapWithIndexTransform",
    "PackAndBatchOperation",
    "PerformanceConfig",
    "ParquetDataSource",
    "ParquetIterDataset",
    "RepeatIterDataset",
    "RngPool",
    "ShapeDtypeStruct",
    "ShapeDtypeStructProtocol",
    "StageSummary",
    "TFRecordDataSource",
    "TFRecordIterDataset",
    "TFRecordWriter",
    "ThreadPrefetchDatasetIterator",
    "ThreadPrefetchIterDataset",
    "WithOptionsIterDataset",
    "ZipIterDataset",
    "ZipMapDataset",
    "apply_transformations",
    "assert_equal_output_after_checkpoint",
    "device_put",
    "get_element_spec",
    "get_execution_summary",
    "get_next_index",
    "index_shuffle",
    "pick_performance_config",
    "plot_execution_summary",
    "set_next_index",
]
