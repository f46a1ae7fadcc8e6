"""Shared-memory arenas: anonymous memfds, and the worker's allocator over its arena.

Each worker owns one arena, an anonymous ``memfd`` that the consumer creates, maps
(``spelt._core.Arena``) and hands to the worker at start. Being anonymous, it never appears in
/dev/shm and disappears with the last process that maps it, whatever way that process ends.

The worker allocates one region per element (all of its large array buffers, packed); the
consumer releases a region when the last numpy view into it dies and tells the worker on its
next request. When no region fits, the worker sends that element through the pipe instead.
"""

from __future__ import annotations

import bisect
import os

# Arena size per worker. Pages are only committed when first written, and a worker reuses the
# lowest free addresses first, so memory in use follows what is in flight, not this bound.
ARENA_BYTES = 256 << 20
# Offsets of array buffers are multiples of this (cache line, and every numpy dtype's alignment).
ALIGNMENT = 64


def align(n: int) -> int:
  """n rounded up to a multiple of ALIGNMENT."""
  return -(-n // ALIGNMENT) * ALIGNMENT


def create_memfd(name: str, size: int) -> int:
  """A new anonymous shared-memory file of `size` bytes (close-on-exec); returns its fd."""
  fd = os.memfd_create(name, os.MFD_CLOEXEC)
  try:
    os.ftruncate(fd, size)
  except BaseException:
    os.close(fd)
    raise
  return fd


class RegionAllocator:
  """First-fit allocator of [0, size) into regions named by their offset.

  Free space is a sorted list of disjoint (offset, length) holes; freeing merges neighbours.
  Lowest-address-first placement keeps the touched part of the arena as small as the data in
  flight allows.
  """

  def __init__(self, size: int):
    self._size = size
    self._holes: list[tuple[int, int]] = [(0, size)]
    self._lengths: dict[int, int] = {}  # offset of each live region -> its length

  def allocate(self, length: int) -> int | None:
    """Offset of a new region of `length` bytes (a multiple of ALIGNMENT), or None if no hole
    is large enough."""
    for i, (offset, hole) in enumerate(self._holes):
      if hole >= length:
        if hole == length:
          del self._holes[i]
        else:
          self._holes[i] = (offset + length, hole - length)
        self._lengths[offset] = length
        return offset
    return None

  def free(self, offset: int) -> None:
    """Returns the region at `offset` (from allocate) to the free space."""
    length = self._lengths.pop(offset)
    i = bisect.bisect_left(self._holes, (offset, 0))
    if i < len(self._holes) and self._holes[i][0] == offset + length:  # merge with the next
      length += self._holes[i][1]
      del self._holes[i]
    if i > 0 and sum(self._holes[i - 1]) == offset:  # merge with the previous
      offset, length = self._holes[i - 1][0], self._holes[i - 1][1] + length
      i -= 1
      del self._holes[i]
    self._holes.insert(i, (offset, length))
