"""Shared-memory arenas: anonymous memfds, one per worker (the mapping: ``_core.Arena``).

Each worker owns one arena, an anonymous ``memfd`` that the consumer creates, maps
(``spelt._core.Arena``, cpp/python/py_arena.cc) and hands to the worker at start. Being
anonymous, it never appears in /dev/shm and disappears with the last process that maps it,
whatever way that process ends. The worker allocates regions of it (first fit, lowest addresses
first) for the elements it sends; the consumer releases a region when the last numpy view into
it dies and tells the worker on its next request.
"""

from __future__ import annotations

import os

# Arena size per worker. Pages are only committed when first written, and a worker reuses the
# lowest free addresses first, so memory in use follows what is in flight, not this bound.
ARENA_BYTES = 256 << 20


def create_memfd(name: str, size: int) -> int:
    """A new anonymous shared-memory file of `size` bytes (close-on-exec); returns its fd."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd
