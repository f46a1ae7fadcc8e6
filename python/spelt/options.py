"""Options dataclasses for reading and multiprocessing.

Behaviour follows Grain 0.2.18 (``grain.ReadOptions`` /
``grain.multiprocessing.MultiprocessingOptions``): slotted dataclasses with the
same fields, defaults, validation and reprs.
"""

from __future__ import annotations

import dataclasses
import logging

__all__ = ["ReadOptions", "MultiprocessingOptions"]

_log = logging.getLogger(__name__)


@dataclasses.dataclass(slots=True)
class ReadOptions:
    """Per-process options for reading records from the data source.

    Args:
        num_threads: int, default 16; reader threads per process (0 reads in
            the calling thread).
        prefetch_buffer_size: int, default 500; records read ahead per process
            (0 disables prefetching).

    Raises:
        ValueError: if an int ``num_threads`` or ``prefetch_buffer_size`` is
            negative.

    As in Grain, a warning is logged when
    ``0 < prefetch_buffer_size < num_threads`` (the buffer then caps the
    useful parallelism).
    """

    num_threads: int = 16
    prefetch_buffer_size: int = 500

    def __post_init__(self):
        if isinstance(self.num_threads, int) and self.num_threads < 0:
            raise ValueError(f"num_threads must be non-negative, got {self.num_threads}")
        if isinstance(self.prefetch_buffer_size, int) and self.prefetch_buffer_size < 0:
            raise ValueError(
                f"prefetch_buffer_size must be non-negative, got {self.prefetch_buffer_size}"
            )
        buffer_size = int(self.prefetch_buffer_size)
        if buffer_size != 0 and buffer_size < int(self.num_threads):
            _log.warning(
                "prefetch_buffer_size=%s is smaller than num_threads=%s. Only"
                " %s threads can then read in parallel, which may hurt"
                " performance. Please set prefetch_buffer_size >= num_threads.",
                self.prefetch_buffer_size,
                self.num_threads,
                self.prefetch_buffer_size,
            )


@dataclasses.dataclass(slots=True)
class MultiprocessingOptions:
    """Options for running the pipeline in worker processes (as in Grain).

    Args:
        num_workers: int, default 0; number of worker processes (0 runs
            everything in the main process).
        per_worker_buffer_size: int, default 1; fully processed elements (e.g.
            batches) each worker may hold ready.
        enable_profiling: bool, default False; log profiling information
            (only with ``num_workers >= 1``).

    Like Grain, the values are not validated here.
    """

    num_workers: int = 0
    per_worker_buffer_size: int = 1
    enable_profiling: bool = False
