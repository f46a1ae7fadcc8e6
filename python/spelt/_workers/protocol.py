"""Messages between the consumer and a worker, and how a chunk of elements is serialized.

Over each worker's socket (``multiprocessing.connection.Connection`` framing), pickled tuples:

* consumer -> worker: a request ``(begin, count, freed)``: compute elements ``begin .. begin +
  count - 1`` of the MapDataset; ``freed`` lists arena regions the consumer no longer uses.
* worker -> consumer: ``("ready",)`` once, when the worker has started; then one reply per
  request, in request order: ``("chunk", record, error, seconds, nbytes)``. ``record``
  (``_core.Arena.store``, cpp/python/py_arena.cc) describes where the elements computed are
  in the worker's arena, in index order (all of them unless ``error``, which is then the packed
  exception of the element after them); ``seconds`` is the worker's time on the chunk and
  ``nbytes`` the bytes the chunk occupies. ``("fatal", error)`` says the worker could not
  start (unpickling the pipeline or worker_init_fn raised); the worker then exits.

A chunk is serialized with one pickler (protocol 5; one memo, so a dtype or a class is written
once per chunk), each element after the other: buffers (numpy arrays, ...) of IN_BAND_BYTES or
more travel out of band, copied into one arena region per element, and come back as zero-copy
views into it. If the arena has no room for them, the chunk is pickled again with everything in
band. ``pickle`` is tried first and cloudpickle second (for classes defined in the user's
``__main__``, which the worker received by value and the consumer maps back to its own).
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import traceback
from typing import Any

import cloudpickle

# Buffers smaller than this are pickled in band.
IN_BAND_BYTES = 8 << 10

READY = "ready"
FATAL = "fatal"
CHUNK = "chunk"


class RemoteTraceback(Exception):
  """Carries a worker's formatted traceback; set as ``__cause__`` of a re-raised exception."""

  def __init__(self, tb: str):
    super().__init__(tb)
    self.tb = tb

  def __str__(self) -> str:
    return f'\n"""\n{self.tb}"""'


def encode(message: tuple) -> bytes:
  return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def decode(message: bytes) -> tuple:
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


@dataclasses.dataclass
class _Pickled:
  """Elements pickled one after the other into `stream` (element k ends at ends[k]); the
  out-of-band buffers of element k are buffers[buffer_ends[k - 1]:buffer_ends[k]]."""
  stream: io.BytesIO
  ends: list[int]
  buffer_ends: list[int]
  buffers: list[memoryview]
  error: Exception | None  # raised by element len(ends), which is not in the stream


def _pickle_with(pickler_class: Any, values: list[Any], in_band: bool) -> _Pickled:
  out = _Pickled(io.BytesIO(), [], [], [], None)

  def callback(buffer: pickle.PickleBuffer) -> bool:
    raw = buffer.raw()
    if raw.nbytes < IN_BAND_BYTES:
      return True
    out.buffers.append(raw)
    return False

  pickler = pickler_class(out.stream, protocol=5, buffer_callback=None if in_band else callback)
  for value in values:
    try:
      pickler.dump(value)
    except Exception as e:  # pylint: disable=broad-exception-caught
      size = out.ends[-1] if out.ends else 0
      out.stream.truncate(size)
      out.stream.seek(size)
      del out.buffers[out.buffer_ends[-1] if out.buffer_ends else 0:]
      out.error = e
      break
    out.ends.append(out.stream.tell())
    out.buffer_ends.append(len(out.buffers))
  return out


def _pickle(values: list[Any], in_band: bool) -> _Pickled:
  pickled = _pickle_with(pickle.Pickler, values, in_band)
  if pickled.error is not None:
    pickled = _pickle_with(cloudpickle.Pickler, values, in_band)
  return pickled


def store_chunk(values: list[Any], arena: Any, begin: int) -> tuple[bytes, int, Any, int]:
  """Serializes the elements `values` (those of indices begin, begin + 1, ...) into `arena`.
  Returns (record, count, error, nbytes): the record holds the first `count` elements; if an
  element cannot be pickled, it is element begin + count and `error` its packed exception."""
  for in_band in (False, True):  # in band when the arena has no room for the buffers
    pickled = _pickle(values, in_band)
    with pickled.stream.getbuffer() as stream:
      record = arena.store(stream, pickled.ends, pickled.buffer_ends, pickled.buffers)
    if record is not None:
      break
  error = None
  if pickled.error is not None:
    pickled.error.add_note(f"spelt: element {begin + len(pickled.ends)} cannot be pickled to"
                           " leave its worker process")
    error = pack_error(pickled.error)
  nbytes = pickled.stream.tell() + sum(b.nbytes for b in pickled.buffers)
  return record, len(pickled.ends), error, nbytes
