"""Grain's legacy ``grain.python`` module: the same objects under their old names."""

from typing import Any

from spelt import checkpoint as _checkpoint
from spelt import experimental
from spelt.checkpoint import CheckpointHandler as PyGrainCheckpointHandler
from spelt.constants import DATASET_INDEX, EPOCH, INDEX, META_FEATURES, RECORD, RECORD_KEY, SEED
from spelt.data_loader import DataLoader, DataLoaderIterator as PyGrainDatasetIterator, load
from spelt.dataset import DatasetIterator, IterDataset, MapDataset
from spelt.options import MultiprocessingOptions, ReadOptions
from spelt.record import Record, RecordMetadata
from spelt.samplers import IndexSampler, Sampler, SequentialSampler
from spelt.sharding import NoSharding, ShardByJaxProcess, ShardOptions
from spelt.sources import RandomAccessDataSource, RangeDataSource
from spelt.transforms import Batch
from spelt.transforms import Filter as FilterTransform
from spelt.transforms import Map as MapTransform
from spelt.transforms import MapWithIndex as MapWithIndexTransform
from spelt.transforms import RandomMap as RandomMapTransform
from spelt.transforms import Transformation, Transformations

__all__ = [
    "DATASET_INDEX",
    "EPOCH",
    "INDEX",
    "META_FEATURES",
    "RECORD",
    "RECORD_KEY",
    "SEED",
    "Batch",
    "DataLoader",
    "DatasetIterator",
    "FilterTransform",
    "IndexSampler",
    "IterDataset",
    "MapDataset",
    "MapTransform",
    "MapWithIndexTransform",
    "MultiprocessingOptions",
    "NoSharding",
    "PyGrainCheckpointHandler",
    "PyGrainDatasetIterator",
    "RandomAccessDataSource",
    "RandomMapTransform",
    "RangeDataSource",
    "ReadOptions",
    "Record",
    "RecordMetadata",
    "Sampler",
    "SequentialSampler",
    "ShardByJaxProcess",
    "ShardOptions",
    "Transformation",
    "Transformations",
    "experimental",
    "load",
]


def __getattr__(name: str) -> Any:
    """``PyGrainCheckpointSave``/``PyGrainCheckpointRestore``: ``spelt.checkpoint``'s Orbax args,
    defined where orbax-checkpoint is installed (as in Grain)."""
    if name in ("PyGrainCheckpointSave", "PyGrainCheckpointRestore"):
        return _checkpoint.orbax_arg(name.removeprefix("PyGrain"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
