"""Messages between the consumer and a worker, and how a chunk of elements is serialized.

Over each worker's socket (``multiprocessing.connection.Connection`` framing), pickled tuples:

* consumer -> worker: a request ``(begin, count, batching, freed)``: compute elements ``begin
  .. begin + count - 1`` of the MapDataset (of its batches if ``batching``, see chunk_node);
  ``freed`` lists arena regions the consumer no longer uses.
* worker -> consumer: ``("ready",)`` once, when the worker has started; then one reply per
  request, in request order: ``("chunk", record, error, seconds, nbytes)``. ``record``
  (``_core.ChunkWriter``, cpp/python/py_chunk_writer.h; layout in arena_record.h) describes where the elements computed are
  in the worker's arena, in index order (all of them unless ``error``, which is then the packed
  exception of the element after them); ``seconds`` is the worker's time on the chunk and
  ``nbytes`` the bytes the chunk occupies. ``("fatal", error)`` says the worker could not
  start (unpickling the pipeline or worker_init_fn raised); the worker then exits.

A chunk is serialized by a ``_core.ChunkWriter`` (cpp/python/py_chunk_writer.h): elements of plain
types (dicts, lists, tuples, numpy arrays, str, bytes, numbers, None) natively, their arrays
copied into one arena region per element; the consumer rebuilds them as engine values over the
arena, without Python objects. Other elements are pickled by pickle_element (protocol 5):
buffers (numpy arrays, ...) of IN_BAND_BYTES or more travel out of band, in the element's
region, and come back as zero-copy views into it; if the arena has no room, an element travels
in band. ``pickle`` is tried first and cloudpickle second (for classes defined in the user's
``__main__``, which the worker received by value and the consumer maps back to its own).
"""

from __future__ import annotations

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


def chunk_node(node: Any, batching: tuple | None) -> Any:
    """The engine MapDataset whose elements a request computes: the pipeline's `node`, or, for
    ``batching = (m, batch_size, drop_remainder, none_marker)``, ``node.batches_from(
    *batching)``: stacked batches of its elements from m on, which raise where an element is
    None (the consumer then batches element by element; spelt/batched_read_ahead.h)."""
    return node if batching is None else node.batches_from(*batching)


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


def pickle_element(value: Any, in_band: bool) -> tuple[bytes, list[memoryview]]:
    """(pickle, out-of-band buffers) of an element that has no tagged encoding (``ChunkWriter.add``
    calls it): protocol 5, buffers of IN_BAND_BYTES or more out of band unless `in_band`.
    ``pickle`` first, cloudpickle if that fails. Raises if neither can pickle it."""
    buffers: list[memoryview] = []

    def callback(buffer: pickle.PickleBuffer) -> bool:
        raw = buffer.raw()
        if raw.nbytes < IN_BAND_BYTES:
            return True
        buffers.append(raw)
        return False

    callback_or_none = None if in_band else callback
    try:
        return pickle.dumps(value, protocol=5, buffer_callback=callback_or_none), buffers
    except Exception:  # pylint: disable=broad-exception-caught
        buffers.clear()
        return cloudpickle.dumps(value, protocol=5, buffer_callback=callback_or_none), buffers
