"""Grain's ``grain.experimental`` names that Spelt provides."""

from __future__ import annotations

import copy
from typing import Any

from spelt import _args
from spelt import _core
from spelt._plot import plot_execution_summary
from spelt._summary import ExecutionSummary, StageSummary
from spelt._summary import execution_summary as get_execution_summary
from spelt.array_record import ArrayRecordWriter
from spelt.dataset import (
    FlatMapIterDataset,
    WithOptionsIterDataset,
    apply_transformations,
    get_next_index,
    set_next_index,
)
from spelt.dataset_options import DatasetOptions, ExecutionTrackingMode
from spelt.device_put import device_put
from spelt.elastic import ElasticIterator
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
from spelt.ray import RayOptions
from spelt.rng_pool import RngPool
from spelt.tfrecord import TFRecordDataSource, TFRecordIterDataset, TFRecordWriter
from spelt.transformations.batch import batch_and_pad
from spelt.transformations.cache import CacheIterDataset
from spelt.transformations.flat_map import FlatMapMapDataset
from spelt.transformations.interleave import InterleaveIterDataset
from spelt.transformations.limit import LimitIterDataset
from spelt.transformations.rebatch import RebatchIterDataset
from spelt.transformations.repeat import RepeatIterDataset
from spelt.transformations.shuffle import WindowShuffleIterDataset, WindowShuffleMapDataset
from spelt.transformations.thread_prefetch import (
    ThreadPrefetchDatasetIterator,
    ThreadPrefetchIterDataset,
)
from spelt.transformations.multithread_prefetch import multithread_prefetch
from spelt.transformations.zip import ZipIterDataset, ZipMapDataset
from spelt.transforms import FlatMap as FlatMapTransform
from spelt.transforms import MapWithIndex as MapWithIndexTransform
from spelt.virtual_shards import VirtualShardIterDataset


def index_shuffle(index: int, max_index: int, seed: int, rounds: int = 4) -> int:
    """Position of index in a pseudo-random permutation of [0, max_index].

    Bit-exact with Grain's index_shuffle, except that Spelt's is a permutation for every
    max_index (Grain's is not when max_index is a power of two 2^k, k even >= 16).
    Errors are Grain's: ValueError (Grain's messages) for rounds odd or outside [4, 1024],
    checked first, then for index outside [0, max_index]; TypeError for a seed or rounds
    outside [0, 2**32), an index or max_index outside int64, or a non-int. ``rounds``
    defaults to 4 (Grain's has no default).
    """
    args = (index, "index"), (max_index, "max_index"), (seed, "seed"), (rounds, "rounds")
    return _core.index_shuffle(*(_args.int_arg(v, f"index_shuffle: {name}") for v, name in args))


def assert_equal_output_after_checkpoint(ds: Any) -> None:
    """Asserts that restoring a checkpoint resumes ``ds`` exactly (Grain's test helper).

    Iterates ``iter(ds)`` to the end, saving ``get_state()`` before every element. Then, for every
    saved state k, a new ``iter(ds)`` restored from it must report that state from
    ``get_state()`` and yield exactly elements k, k + 1, ... Raises AssertionError naming the
    first step that differs (also if ``ds`` yields nothing). Unlike Grain's, it does not
    require all states to have one structure.
    """
    import numpy as np  # pylint: disable=import-outside-toplevel

    iterator = iter(ds)
    states, expected = [], []
    while True:
        state = copy.deepcopy(iterator.get_state())
        try:
            value = next(iterator)
        except StopIteration:
            break
        states.append(state)
        expected.append(value)
    if not expected:
        raise AssertionError("Dataset did not produce any elements.")
    for k, state in enumerate(states):
        restored = iter(ds)
        restored.set_state(copy.deepcopy(state))
        np.testing.assert_equal(restored.get_state(), state, f"restored state differs at step {k}")
        rest = list(restored)
        if len(rest) != len(expected) - k:
            raise AssertionError(
                f"after restoring at element {k}: got {len(rest)} elements, expected"
                f" {len(expected) - k}"
            )
        np.testing.assert_equal(
            rest, expected[k:], f"after restoring at element {k}: the elements differ"
        )


__all__ = [
    "ArrayRecordWriter",
    "BOSHandling",
    "BestFitPackIterDataset",
    "CacheIterDataset",
    "ConcatThenSplitIterDataset",
    "DatasetOptions",
    "ExecutionSummary",
    "ElasticIterator",
    "ExecutionTrackingMode",
    "FirstFitPackIterDataset",
    "FlatMapIterDataset",
    "FlatMapMapDataset",
    "FlatMapTransform",
    "HuggingFaceIterDataset",
    "InterleaveIterDataset",
    "LimitIterDataset",
    "MapWithIndexTransform",
    "PackAndBatchOperation",
    "PerformanceConfig",
    "ParquetDataSource",
    "ParquetIterDataset",
    "RayOptions",
    "RebatchIterDataset",
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
    "VirtualShardIterDataset",
    "WindowShuffleIterDataset",
    "WindowShuffleMapDataset",
    "WithOptionsIterDataset",
    "ZipIterDataset",
    "ZipMapDataset",
    "apply_transformations",
    "assert_equal_output_after_checkpoint",
    "batch_and_pad",
    "device_put",
    "get_element_spec",
    "get_execution_summary",
    "get_next_index",
    "index_shuffle",
    "multithread_prefetch",
    "pick_performance_config",
    "plot_execution_summary",
    "set_next_index",
]
