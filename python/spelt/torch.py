"""PyTorch face: Spelt batches as ``torch.Tensor`` s, sharded by rank, checkpointable.

``import spelt.torch`` needs ``torch`` (the ``spelt-ml[torch]`` extra); ``import spelt`` does
not import this module. Three pieces, used together or alone:

- ``to_torch(tree)``: numpy leaves of a batch (dicts, lists, tuples, named tuples, nested)
  become tensors that share the arrays' memory (no copy).
- ``IterableDataset(data, ...)``: a ``torch.utils.data.IterableDataset`` over a Spelt
  ``MapDataset``, ``IterDataset`` or ``DataLoader`` that reads this process's shard of the data
  (``torch.distributed`` rank and world size by default) and yields tensors, optionally in
  pinned memory prepared on a background thread.
- ``state_dict()`` / ``load_state_dict()`` on the dataset and on its iterator, so a trainer that
  checkpoints ``Stateful`` objects (torchtitan, ``torch.distributed.checkpoint``) saves the
  input position beside the model; a restored iterator continues exactly where the saved one
  stood: nothing repeated, nothing skipped.

docs/pytorch.md has a recipe.
"""

from __future__ import annotations

import collections.abc
import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.utils.data

from spelt.data_loader import DataLoader
from spelt.dataset import IterDataset, MapDataset
from spelt.sharding import ShardOptions

__all__ = ["IterableDataset", "Iterator", "shard_options", "to_torch"]

Data = MapDataset | IterDataset | DataLoader
DataFactory = Callable[[ShardOptions], Data]

# ml_dtypes' types that torch computes with, under the same names (one byte or two per value).
_ML_DTYPES = frozenset(
    (
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
    )
)

_STATE_VERSION = 1
_PREFETCH = 2  # pinned batches the background thread prepares ahead


def _leaf_to_torch(leaf: Any) -> Any:
    if isinstance(leaf, np.generic):
        leaf = np.asarray(leaf)
    if not isinstance(leaf, np.ndarray) or leaf.dtype.kind in "OSU" or leaf.dtype.names:
        return leaf  # not an array, or objects, bytes, strings, records: no tensor type
    if leaf.dtype.kind == "V":  # ml_dtypes' bfloat16, float8_*: torch's types of those names
        dtype = getattr(torch, leaf.dtype.name, None) if leaf.dtype.name in _ML_DTYPES else None
        if isinstance(dtype, torch.dtype) and dtype.itemsize == leaf.dtype.itemsize:
            return torch.from_numpy(leaf.view(f"u{leaf.dtype.itemsize}")).view(dtype)
        # int4, uint4, int2, float4_e2m1fn, ...: torch's shell dtypes of those names (if any)
        # hold one value per byte with no arithmetic, so a tensor of them is unusable.
        raise TypeError(
            f"spelt.torch: a numpy array of dtype {leaf.dtype} has no usable torch dtype;"
            " convert it first (e.g. leaf.astype(np.int8))"
        )
    try:
        return torch.from_numpy(leaf)
    except TypeError as e:
        raise TypeError(
            f"spelt.torch: a numpy array of dtype {leaf.dtype} has no torch dtype"
        ) from e


def _map_leaves(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` (dicts, lists, tuples, named tuples) with ``fn`` applied to its leaves."""
    if isinstance(tree, dict):
        return type(tree)((k, _map_leaves(fn, v)) for k, v in tree.items())
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # named tuple
        return type(tree)(*(_map_leaves(fn, v) for v in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map_leaves(fn, v) for v in tree)
    return fn(tree)


def to_torch(tree: Any) -> Any:
    """Returns ``tree`` with its numpy leaves as ``torch.Tensor`` s sharing their memory.

    Args:
        tree: a batch: a numpy array, or dicts, lists and tuples (named tuples too) of them,
            nested. Leaves that are not numpy arrays or scalars (``int``, ``str``, ``None``,
            ...) and arrays of objects, bytes or strings are returned unchanged.

    Returns:
        The same structure (same container types, same dict keys and order). A numpy array
        becomes a CPU tensor of the same shape, strides and dtype that views the array's
        buffer (``torch.from_numpy``; no copy, so writing to one writes to the other); a
        numpy scalar becomes a 0-d tensor; ml_dtypes' ``bfloat16`` and ``float8_*`` arrays
        become tensors of torch's dtype of that name (also without a copy).

    Raises:
        TypeError: for a numpy dtype torch has no usable type for (ml_dtypes' ``int4``,
            ``uint4``, ``int2``, ``float4_e2m1fn``, for example), naming the dtype.
        ValueError: for an array with a negative stride (torch has none; ``np.ascontiguousarray``
            first).

    Thread-safety: a pure function; safe from any thread.
    """
    return _map_leaves(_leaf_to_torch, tree)


def _pin(leaf: Any) -> Any:
    return leaf.pin_memory() if isinstance(leaf, torch.Tensor) else leaf


def _accelerator_available() -> bool:
    return torch.cuda.is_available()


def shard_options(drop_remainder: bool = False) -> ShardOptions:
    """This process's shard: ``torch.distributed`` rank of world size.

    Args:
        drop_remainder: bool, default False; see ``spelt.sharding.ShardOptions``.

    Returns:
        ``ShardOptions(rank, world_size, drop_remainder)`` when ``torch.distributed`` is
        initialized (``init_process_group`` was called), else ``ShardOptions(0, 1, ...)``.

    Thread-safety: safe from any thread.
    """
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return ShardOptions(dist.get_rank(), dist.get_world_size(), drop_remainder)
    return ShardOptions(0, 1, drop_remainder)


_distributed_shard = shard_options  # IterableDataset's argument of that name hides it


def _shard_of(data: Data | DataFactory, shard: ShardOptions) -> Data:
    if isinstance(data, MapDataset):
        n, k = shard.shard_count, shard.shard_index
        if shard.drop_remainder:
            data = data[: len(data) // n * n]
        return data[k::n]
    if isinstance(data, (IterDataset, DataLoader)):
        if shard.shard_count != 1:
            raise ValueError(
                f"spelt.torch.IterableDataset: a {type(data).__name__} cannot be sharded once "
                f"built, and this is shard {shard.shard_index} of {shard.shard_count}; pass a "
                "function of ShardOptions that builds this shard's pipeline (e.g. a "
                "DataLoader whose IndexSampler has shard_options=...), or a MapDataset"
            )
        return data
    if callable(data):
        built = data(shard)
        if not isinstance(built, (MapDataset, IterDataset, DataLoader)):
            raise TypeError(
                "spelt.torch.IterableDataset: the function returned a "
                f"{type(built).__name__}, not a MapDataset, IterDataset or DataLoader"
            )
        return built
    raise TypeError(
        "spelt.torch.IterableDataset: data must be a MapDataset, IterDataset, DataLoader or a "
        f"function of ShardOptions, not {type(data).__name__}"
    )


def _shard_dict(shard: ShardOptions) -> dict:
    return {"index": shard.shard_index, "count": shard.shard_count}


class IterableDataset(torch.utils.data.IterableDataset):
    """A ``torch.utils.data.IterableDataset`` of this process's shard of a Spelt pipeline.

    Args:
        data: what to read. A ``MapDataset`` (of elements or of batches) is sharded here:
            this shard reads elements ``shard_index, shard_index + shard_count, ...`` (with
            ``drop_remainder``, the length is first cut to a multiple of ``shard_count`` so
            every rank takes the same number of steps). An ``IterDataset`` or ``DataLoader``
            cannot be sharded after it is built, so it is accepted only when there is one
            shard; otherwise pass a function ``f(shard_options) -> MapDataset | IterDataset
            | DataLoader`` that builds this shard's pipeline (for example with
            ``IndexSampler(..., shard_options=shard_options)``), called once here.
        shard_options: ``spelt.sharding.ShardOptions``; default ``shard_options()`` (the
            ``torch.distributed`` rank and world size, or one shard when it is not
            initialized).
        pin_memory: bool, default False. If True, a background thread per iterator reads
            ahead (2 batches) and copies each batch into page-locked memory, ready for
            ``tensor.to("cuda", non_blocking=True)``.

    Iterating yields the pipeline's elements with numpy leaves as tensors (``to_torch``: same
    shapes and dtypes, views without a copy unless pinned). Use it directly, or in
    ``torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)``: Spelt batches and
    runs workers itself (``DataLoader(worker_count=N)``, ``mp_prefetch``); torch worker
    processes would each read the whole shard.

    ``state_dict()`` / ``load_state_dict()`` here are those of the latest iterator (as
    torchdata's ``StatefulDataLoader``): a state loaded before ``iter()`` is where the next
    iterator starts.

    Raises:
        TypeError: ``data`` is of another type, or the function returns one.
        ValueError: an ``IterDataset`` or ``DataLoader`` with more than one shard.
        RuntimeError: ``pin_memory=True`` where torch has no accelerator
            (``torch.cuda.is_available()`` is False, as with the CPU build): pinning needs one.

    Thread-safety: create iterators from one thread; each iterator is used by one thread.
    """

    def __init__(
        self,
        data: Data | DataFactory,
        *,
        shard_options: ShardOptions | None = None,
        pin_memory: bool = False,
    ):
        super().__init__()
        if pin_memory and not _accelerator_available():
            raise RuntimeError(
                "spelt.torch: pin_memory=True needs an accelerator, and "
                "torch.cuda.is_available() is False (page-locked memory is only for "
                "copies to a device); pass pin_memory=False"
            )
        self._shard = shard_options if shard_options is not None else _distributed_shard()
        self._data = _shard_of(data, self._shard)
        self._pin_memory = pin_memory
        self._latest: Iterator | None = None
        self._pending: dict | None = None

    @property
    def shard(self) -> ShardOptions:
        """The ``ShardOptions`` this dataset reads."""
        return self._shard

    def __iter__(self) -> Iterator:
        info = torch.utils.data.get_worker_info()
        if info is not None:
            raise RuntimeError(
                "spelt.torch.IterableDataset runs in a torch DataLoader worker process, "
                "where each worker would read the whole shard; use num_workers=0 and "
                "Spelt's workers (DataLoader(worker_count=N) or mp_prefetch)"
            )
        it = Iterator(self._data, self._shard, self._pin_memory)
        if self._pending is not None:
            it.load_state_dict(self._pending)
            self._pending = None
        self._latest = it
        return it

    def state_dict(self) -> dict:
        """The latest iterator's ``state_dict()`` (or the loaded one, or the start)."""
        if self._pending is not None:
            return self._pending
        if self._latest is None:
            return Iterator(self._data, self._shard, False).state_dict()
        return self._latest.state_dict()

    def load_state_dict(self, state_dict: dict) -> None:
        """Makes the next ``iter()`` start at ``state_dict`` (checked now; see ``Iterator``)."""
        _check_state(state_dict, self._shard)
        self._pending = state_dict
        self._latest = None


def _check_state(state_dict: Any, shard: ShardOptions) -> None:
    if not isinstance(state_dict, collections.abc.Mapping) or state_dict.get("version") != (
        _STATE_VERSION
    ):
        raise ValueError(
            f"spelt.torch: not a state_dict of spelt.torch (version {_STATE_VERSION}): "
            f"{state_dict!r:.200}"
        )
    if state_dict.get("shard") != _shard_dict(shard):
        raise ValueError(
            f"spelt.torch: the state_dict is of shard {state_dict.get('shard')}, and this "
            f"iterator reads shard {_shard_dict(shard)}"
        )


class Iterator(collections.abc.Iterator):
    """Iterator of a ``spelt.torch.IterableDataset``: elements as tensors, with a state.

    ``next()`` returns the pipeline's next element with numpy leaves as tensors (see
    ``to_torch``), in pinned memory if the dataset has ``pin_memory=True``; raises
    ``StopIteration`` at the end, and re-raises an error of the pipeline (the background
    thread's too, in the calling thread).

    ``state_dict()`` is ``{"version": 1, "shard": {"index": i, "count": n}, "spelt": s}``,
    ``s`` the Spelt iterator's state after the last element returned (elements the
    background thread prepared but not returned do not count): a ``DatasetIterator``'s dict
    or a ``DataLoader`` iterator's JSON text. It is small and JSON-serialisable, and the
    same for any number of Spelt workers. ``load_state_dict(state)`` moves this iterator
    there (in any process); raises ``ValueError`` for a state of another shard or not of
    ``spelt.torch``, and Spelt's errors for a state of another pipeline.

    Thread-safety: one thread uses an iterator; its background thread touches only the
    Spelt iterator and a queue, and is stopped by ``load_state_dict``, ``close()`` or
    garbage collection.
    """

    def __init__(self, data: Data, shard: ShardOptions, pin_memory: bool):
        self._spelt = iter(data)
        self._shard = shard
        self._pin_memory = pin_memory
        self._worker: _PinThread | None = None
        self._state = None  # with a worker: the Spelt state after the last element returned

    def __next__(self) -> Any:
        if not self._pin_memory:
            return to_torch(next(self._spelt))
        if self._worker is None:
            self._state = self._spelt.get_state()
            self._worker = _PinThread(self._spelt)
        element, self._state = self._worker.next()
        return element

    def state_dict(self) -> dict:
        state = self._spelt.get_state() if self._worker is None else self._state
        if isinstance(state, bytes):  # a DataLoader iterator's: Grain's JSON
            state = state.decode()
        return {"version": _STATE_VERSION, "shard": _shard_dict(self._shard), "spelt": state}

    def load_state_dict(self, state_dict: dict) -> None:
        _check_state(state_dict, self._shard)
        self.close()
        state = state_dict["spelt"]
        self._spelt.set_state(state.encode() if isinstance(state, str) else state)

    def close(self) -> None:
        """Stops the background thread (if any), dropping what it read ahead; ``next()``
        goes on after the last element returned (starting a new thread)."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
            self._spelt.set_state(self._state)

    def __del__(self):
        if self._worker is not None:
            self._worker.stop()


_END = object()


class _PinThread:
    """Reads a Spelt iterator ahead on a thread: (pinned element, state after it) pairs."""

    def __init__(self, spelt_iterator):
        self._it = spelt_iterator
        self._queue: queue.Queue = queue.Queue(maxsize=_PREFETCH)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spelt-torch-pin", daemon=True)
        self._thread.start()

    def _run(self):
        try:
            for element in self._it:
                item = (_map_leaves(_pin, to_torch(element)), self._it.get_state())
                if not self._put(item):
                    return
            self._put(_END)
        except Exception as e:  # handed to the consumer, raised there
            self._put(e)

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def next(self):
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)  # later calls end too
            raise StopIteration
        if isinstance(item, BaseException):
            self._queue.put(item)
            raise item
        return item

    def stop(self):
        self._stop.set()
        self._thread.join()
