"""Grain's ``grain.multiprocessing`` names."""

from spelt.options import MultiprocessingOptions

__all__ = ["MultiprocessingOptions"]
