"""Grain's ``grain.multiprocessing`` names."""

from spelt.options import MultiprocessingOptions
from spelt.shared_memory import SharedMemoryArray, SharedMemoryArrayMetadata

__all__ = ["MultiprocessingOptions", "SharedMemoryArray", "SharedMemoryArrayMetadata"]
