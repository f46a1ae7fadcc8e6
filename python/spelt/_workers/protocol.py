"""Messages between the consumer and a worker, and how elements are serialized.

Over each worker's socket (``multiprocessing.connection.Connection`` framing):

* consumer -> worker: a request ``(begin, size, freed)``: compute elements ``begin .. begin +
  size - 1`` of the MapDataset; ``freed`` lists arena regions the consumer no longer uses.
* worker -> consumer, one reply per request, in request order: a header then a payload.
  The header is ``(elements, error, seconds)``: ``elements`` has one ``(length, region,
  spans)`` per element computed, in index order (all of them unless ``error``, which is then
  the exception of the element after them); the payload is the elements' pickles, ``length``
  bytes each, one after the other; an element's large buffers live in arena region ``region``
  (None if it has none) at ``spans`` ((offset, size) pairs); ``seconds`` is the worker's time
  on the chunk. A header ``("fatal", error)`` (no payload) says the worker could not start
  (unpickling the pipeline or worker_init_fn failed); the worker then exits.

Elements are pickled one by one, with protocol 5, as soon as they are computed: numpy arrays
(and other PickleBuffer-aware objects) of IN_BAND_BYTES or more travel out of band, copied into
a region of the arena, and come back as zero-copy views into it; the worker then drops the
element, so its memory is reused for the next one. Smaller buffers stay in the payload, where
they are cheaper. ``pickle`` is tried first and cloudpickle second (for classes defined in the
user's ``__main__``, which the worker received by value and the consumer maps back to its own).
"""

from __future__ import annotations

import pickle
import traceback
from typing import Any

import cloudpickle

from spelt._workers import arena as arena_lib

# Buffers smaller than this are pickled in band.
IN_BAND_BYTES = 8 << 10


class RemoteTraceback(Exception):
  """Carries a worker's formatted traceback; set as ``__cause__`` of a re-raised exception."""

  def __init__(self, tb: str):
    super().__init__(tb)
    self.tb = tb

  def __str__(self) -> str:
    return f'\n"""\n{self.tb}"""'


def encode_request(begin: int, size: int, freed: list[int]) -> bytes:
  return pickle.dumps((begin, size, freed), protocol=pickle.HIGHEST_PROTOCOL)


def decode_request(message: bytes) -> tuple[int, int, list[int]]:
  return pickle.loads(message)


def pack_error(error: BaseException) -> tuple[bytes, str]:
  """(pickled exception, formatted traceback). An exception that does not survive pickling
  is replaced by a RuntimeError quoting it."""
  tb = "".join(traceback.format_exception(error))
  try:
    data = cloudpickle.dumps(error)
    pickle.loads(data)
  except Exception:  # pylint: disable=broad-exception-caught
    data = cloudpickle.dumps(RuntimeError(f"{type(error).__qualname__}: {error}"))
  return data, tb


def unpack_error(packed: tuple[bytes, str], where: str | None = None) -> BaseException:
  """The worker's exception, with its traceback as __cause__ (and a note saying `where`)."""
  data, tb = packed
  error = pickle.loads(data)
  error.__cause__ = RemoteTraceback(tb)
  if where is not None:
    error.add_note(where)
  return error


def fatal_header(error: BaseException) -> bytes:
  return pickle.dumps(("fatal", pack_error(error)), protocol=pickle.HIGHEST_PROTOCOL)


def is_fatal(header: tuple) -> bool:
  return header[0] == "fatal"


def _dumps(value: Any, buffers: list[memoryview] | None) -> bytes:
  """Pickles `value`, appending out-of-band buffers to `buffers` (None: all in band)."""
  callback = None
  if buffers is not None:
    def callback(buffer: pickle.PickleBuffer) -> bool:
      raw = buffer.raw()
      if raw.nbytes < IN_BAND_BYTES:
        return True
      buffers.append(raw)
      return False

  try:
    return pickle.dumps(value, protocol=5, buffer_callback=callback)
  except Exception:  # pylint: disable=broad-exception-caught
    if buffers is not None:
      buffers.clear()
    return cloudpickle.dumps(value, protocol=5, buffer_callback=callback)


class ChunkWriter:
  """Builds one reply in the worker: add() each element as it is computed, then finish()."""

  def __init__(self, arena: Any, allocator: arena_lib.RegionAllocator):
    self._arena = arena
    self._allocator = allocator
    self._elements: list[tuple[int, int | None, list[tuple[int, int]]]] = []
    self._pickles: list[bytes] = []

  def add(self, value: Any) -> None:
    """Serializes `value`, its large buffers into a new arena region when one is free (else
    in band). Raises if it cannot be pickled."""
    buffers: list[memoryview] = []
    data = _dumps(value, buffers)
    region, spans = None, []
    if buffers:
      region = self._allocator.allocate(sum(arena_lib.align(b.nbytes) for b in buffers))
      if region is None:  # the arena is full (or too small): in band
        data = _dumps(value, None)
      else:
        offset = region
        for raw in buffers:
          self._arena.write(offset, raw)
          spans.append((offset, raw.nbytes))
          offset += arena_lib.align(raw.nbytes)
    self._elements.append((len(data), region, spans))
    self._pickles.append(data)

  def finish(self, error: tuple[bytes, str] | None, seconds: float) -> tuple[bytes, bytes]:
    """(header, payload) of the reply."""
    header = (self._elements, error, seconds)
    return pickle.dumps(header, protocol=pickle.HIGHEST_PROTOCOL), b"".join(self._pickles)


def decode_header(message: bytes) -> tuple:
  """A reply header: a chunk header, or ``("fatal", packed_error)``."""
  return pickle.loads(message)


def regions(header: tuple) -> list[int]:
  """The arena regions a chunk reply uses."""
  return [region for _, region, _ in header[0] if region is not None]


def decode_values(header: tuple, payload: bytes, arena: Any) -> list[Any]:
  """The elements of a chunk reply, arrays as views into `arena`. A region is released by
  the arena once every view into it is gone."""
  values, offset = [], 0
  payload = memoryview(payload)
  for length, region, spans in header[0]:
    data = payload[offset:offset + length]
    offset += length
    if region is None:
      values.append(pickle.loads(data))
    else:
      values.append(pickle.loads(data, buffers=arena.views(region, spans)))
  return values


def payload_bytes(header: tuple, payload: bytes) -> int:
  """Bytes a reply moved: its payload and its arena spans."""
  return len(payload) + sum(size for _, _, spans in header[0] for _, size in spans)
