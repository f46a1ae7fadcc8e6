"""Per-record metadata flowing through a DataLoader pipeline.

Behaviour follows Grain 0.2.18 (``grain.python.RecordMetadata`` / ``Record``):
slotted dataclasses with the same fields, defaults, reprs and ``str``.
"""

from __future__ import annotations

import dataclasses
from typing import Generic, Optional, TypeVar

import numpy as np

__all__ = ["RecordMetadata", "Record"]

T = TypeVar("T")


@dataclasses.dataclass(slots=True)
class RecordMetadata:
    """Metadata of one record: where it is in the stream and which key it reads.

    Args:
        index: int, global position of the record in the sampler's stream.
        record_key: Optional[int], default None; the key to read from the data
            source (None once the record no longer maps to a single key, e.g.
            after batching).
        rng: Optional[np.random.Generator], default None; per-record generator
            for random transformations.

    Same fields, repr (dataclass repr) and ``str`` as Grain's.
    """

    index: int
    record_key: Optional[int] = None
    rng: Optional[np.random.Generator] = None

    def remove_record_key(self) -> "RecordMetadata":
        """Returns ``self`` if ``record_key`` is None, else a copy without it."""
        if self.record_key is None:
            return self
        return dataclasses.replace(self, record_key=None)

    def __str__(self) -> str:
        return f"RecordMetadata(index={self.index}, record_key={self.record_key}, rng={self.rng})"


@dataclasses.dataclass(slots=True)
class Record(Generic[T]):
    """A data element together with its ``RecordMetadata`` (as in Grain).

    Args:
        metadata: RecordMetadata of the element.
        data: T, the element itself.
    """

    metadata: RecordMetadata
    data: T
