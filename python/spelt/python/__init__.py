"""Grain's legacy ``grain.python`` module: the same objects under their old names."""

from typing import Any

from spelt import checkpoint as _checkpoint
from spelt._config import config
from spelt.checkpoint import CheckpointHandler as PyGrainCheckpointHandler
from spelt.constants import DATASET_INDEX, EPOCH, INDEX, META_FEATURES, RECORD, RECORD_KEY, SEED
from spelt.data_loader import DataLoader, load
from spelt.data_loader import DataLoaderIterator as PyGrainDatasetIterator
from spelt.dataset import DatasetIterator, IterDataset, MapDataset
from spelt.operations import (
    BatchOperation,
    FilterOperation,
    MapOperation,
    Operation,
    RandomMapOperation,
)
from spelt.options import MultiprocessingOptions, ReadOptions
from spelt.python import experimental
from spelt.record import Record, RecordMetadata
from spelt.samplers import IndexSampler, Sampler, SequentialSampler
from spelt.sharding import NoSharding, ShardByJaxProcess, ShardOptions
from spelt.shared_memory import SharedMemoryArray
from spelt.shared_memory import SharedMemoryDataSource as InMemoryDataSource
from spelt.sources import ArrayRecordDataSource, RandomAccessDataSource, RangeDataSource
from spelt.transforms import Batch, DatasetSelectionMap, Transformation, Transformations
from spelt.transforms import Filter as FilterTransform
from spelt.transforms import Map as MapTransform
from spelt.transforms import MapWithIndex as MapWithIndexTransform
from spelt.transforms import RandomMap as RandomMapTransform

__all__ = [
    "DATASET_INDEX",
    "EPOCH",
    "INDEX",
    "META_FEATURES",
    "RECORD",
    "RECORD_KEY",
    "SEED",
    "ArrayRecordDataSource",
    "Batch",
    "BatchOperation",
    "DataLoader",
    "DatasetIterator",
    "DatasetSelectionMap",
    "FilterOperation",
    "FilterTransform",
    "InMemoryDataSource",
    "IndexSampler",
    "IterDataset",
    "MapDataset",
    "MapOperation",
    "MapTransform",
    "MapWithIndexTransform",
    "MultiprocessingOptions",
    "NoSharding",
    "Operation",
    "PyGrainCheckpointHandler",
    "PyGrainDatasetIterator",
    "RandomAccessDataSource",
    "RandomMapOperation",
    "RandomMapTransform",
    "RangeDataSource",
    "ReadOptions",
    "Record",
    "RecordMetadata",
    "Sampler",
    "SequentialSampler",
    "ShardByJaxProcess",
    "ShardOptions",
    "SharedMemoryArray",
    "Transformation",
    "Transformations",
    "config",
    "experimental",
    "load",
]


def __getattr__(name: str) -> Any:
    """``PyGrainCheckpointSave``/``PyGrainCheckpointRestore``: ``spelt.checkpoint``'s Orbax args,
    defined where orbax-checkpoint is installed (as in Grain)."""
    if name in ("PyGrainCheckpointSave", "PyGrainCheckpointRestore"):
        return _checkpoint.orbax_arg(name.removeprefix("PyGrain"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
