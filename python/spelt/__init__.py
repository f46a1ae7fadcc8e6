"""Spelt: a fast, deterministic, checkpointable data loader with Grain's API.

``import spelt as grain`` runs Grain code. The engine is C++ (libspelt); this package is the
thin Python face over it. See README.md and docs/compatibility.md.
"""

from spelt import checkpoint
from spelt import constants
from spelt import monitoring
from spelt import multiprocessing
from spelt import samplers
from spelt import sharding
from spelt import sources
from spelt import transforms
from spelt._config import config
from spelt.data_loader import DataLoader, DataLoaderIterator, load
from spelt.dataset import DatasetIterator, IterDataset, MapDataset
from spelt.options import MultiprocessingOptions, ReadOptions
from spelt.record import Record, RecordMetadata

__version__ = "0.1.0"

# Imported on first use (spelt.experimental or `from spelt import experimental`): it brings
# the modules of Parquet, TFRecord, packing, Ray and plotting, which most pipelines never use
# (docs/benchmarks.md, I1).
_LAZY_MODULES = ("experimental",)


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        import importlib  # pylint: disable=import-outside-toplevel

        return importlib.import_module(f"spelt.{name}")
    raise AttributeError(f"module 'spelt' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_MODULES))


__all__ = [
    "DataLoader",
    "DataLoaderIterator",
    "DatasetIterator",
    "IterDataset",
    "MapDataset",
    "MultiprocessingOptions",
    "ReadOptions",
    "Record",
    "RecordMetadata",
    "checkpoint",
    "config",
    "constants",
    "experimental",
    "load",
    "monitoring",
    "multiprocessing",
    "samplers",
    "sharding",
    "sources",
    "transforms",
]
