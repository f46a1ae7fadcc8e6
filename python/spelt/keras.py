"""Keras 3 face: ``model.fit(spelt.keras.dataset(ds))`` trains on a Spelt pipeline.

Keras recognises Grain's datasets by their class names and a module path containing "grain",
then rebuilds them with the ``grain`` package, so Spelt's objects cannot go in as they are.
Keras's own entry for other inputs is a data adapter: ``fit``, ``evaluate`` and ``predict``
take any instance of Keras's ``DataAdapter`` base class as it is (the first check of
``keras.src.trainers.data_adapters.get_data_adapter``), and ``dataset(ds)`` returns one.
Nothing in Keras is patched. ``import spelt.keras`` needs ``keras`` 3 (the ``spelt-ml[keras]``
extra); ``import spelt`` does not import this module.

``BackupAndRestore`` is Keras's callback of that name that also saves where the data stood,
so a resumed run reads on from there. docs/keras.md has a recipe.
"""

from __future__ import annotations

import collections
import json
import os
from typing import Any

import keras

from spelt.data_loader import DataLoader
from spelt.dataset import IterDataset, MapDataset

try:
    from keras.src.trainers.data_adapters import data_adapter_utils
    from keras.src.trainers.data_adapters.data_adapter import DataAdapter
except ImportError as e:  # pragma: no cover: a Keras without the adapter layout of 3.x
    raise ImportError(
        f"spelt.keras needs Keras 3's data adapters (keras {keras.__version__} has none)"
    ) from e

__all__ = ["BackupAndRestore", "Dataset", "dataset"]

_RECENT = 64  # states kept of the latest batches handed to Keras (Keras reads ahead <= 2)
_NEW_PASS = {"pass": "new"}


def dataset(data: Any) -> "Dataset":
    """Returns ``data`` as an input for Keras's ``fit``, ``evaluate`` and ``predict``.

    Args:
        data: a Spelt ``MapDataset``, ``IterDataset`` or ``DataLoader`` whose elements are
            batches, or an iterator of one of them (``iter(ds)``). A batch is what Keras
            takes from a Grain dataset: ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``
            (tuples or lists), or a dict; numpy leaves, with the batch dimension first.

    Returns:
        A ``Dataset`` (a Keras data adapter). Each time Keras starts a pass over its input
        (every epoch without ``steps_per_epoch``; once per ``fit`` with it, reading on across
        epochs as Keras does), a dataset is read from its start, as Keras reads a Grain
        dataset, while an iterator is read on from where it stands (one stream over all
        epochs and calls). Keras's ``shuffle`` argument is ignored (the pipeline shuffles).

    Raises:
        TypeError: ``data`` is none of these.

    Thread-safety: Keras reads the returned object from one thread; use one per ``fit`` /
    ``evaluate`` / ``predict`` input (a training stream and a validation stream are two).
    """
    return Dataset(data)


def _is_spelt_iterator(data: Any) -> bool:
    return hasattr(data, "__next__") and hasattr(data, "get_state") and hasattr(data, "set_state")


class Dataset(DataAdapter):
    """A Spelt pipeline as a Keras 3 data adapter (made by ``dataset(data)``, which see).

    The backends' iterators (``get_jax_iterator``, ``get_numpy_iterator``,
    ``get_torch_dataloader``) hand Keras the pipeline's batches, converted by Keras's own
    helpers; ``get_tf_dataset`` raises ``NotImplementedError`` (the TensorFlow backend is not
    supported). ``num_batches`` and ``batch_size`` are None, as for a Grain dataset: an epoch
    ends where the data ends or after ``steps_per_epoch`` batches.

    ``get_state()`` is the position after the batches handed to Keras so far:
    ``{"pass": "new"}`` (the next pass starts afresh) or ``{"iterator": s}``, ``s`` the
    Spelt iterator's state (a dict, or a ``DataLoader`` iterator's JSON text): small and
    JSON-serialisable. ``set_state(state)`` makes the next batch Keras reads the one after
    that position (a position at the end of a dataset's pass: the first of the next pass);
    it raises Spelt's errors for a state of another pipeline. Keras may read ahead of the step it trains (one batch on
    accelerators); ``BackupAndRestore`` accounts for that, a bare ``get_state()`` does not.

    Thread-safety: one thread (Keras's) reads it.
    """

    def __init__(self, data: Any):
        if isinstance(data, (MapDataset, IterDataset, DataLoader)):
            self._passes_restart = True
            self._iterator = None
        elif _is_spelt_iterator(data):
            self._passes_restart = False
            self._iterator = data
        else:
            raise TypeError(
                "spelt.keras.dataset: data must be a Spelt MapDataset, IterDataset, "
                f"DataLoader or an iterator of one, not {type(data).__name__}"
            )
        self._data = data
        self._resume = False  # set_state: the next pass reads on from self._iterator
        self.handed = 0  # batches handed to Keras, all passes
        self._recent: collections.deque = collections.deque(maxlen=_RECENT)

    # ---- Keras's DataAdapter -----------------------------------------------------------------

    def get_numpy_iterator(self):
        return data_adapter_utils.get_numpy_iterator(self._batches())

    def get_jax_iterator(self):
        return data_adapter_utils.get_jax_iterator(self._batches())

    def get_torch_dataloader(self):
        return data_adapter_utils.get_torch_dataloader(self._batches())

    def get_tf_dataset(self):
        raise NotImplementedError(
            "spelt.keras supports the JAX, torch and numpy backends of Keras, not TensorFlow"
        )

    @property
    def num_batches(self):
        return None

    @property
    def batch_size(self):
        return None

    @property
    def has_partial_batch(self):
        return None

    @property
    def partial_batch_size(self):
        return None

    # ---- the position ------------------------------------------------------------------------

    def get_state(self) -> dict:
        """The position after every batch handed to Keras so far (see the class)."""
        if self._iterator is None:
            return dict(_NEW_PASS)
        state = self._iterator.get_state()
        return {"iterator": state.decode() if isinstance(state, bytes) else state}

    def set_state(self, state: dict) -> None:
        """Moves the input to ``state`` (a ``get_state()``); Keras's next batch follows it."""
        if state == _NEW_PASS and self._passes_restart:
            self._iterator = None
        elif isinstance(state, dict) and set(state) == {"iterator"}:
            if self._iterator is None:
                self._iterator = iter(self._data)
            s = state["iterator"]
            self._iterator.set_state(s.encode() if isinstance(s, str) else s)
        else:
            raise ValueError(f"spelt.keras: not a state of this input: {state!r:.200}")
        self._resume = True
        self._recent.clear()
        self._recent.append((self.handed, self.get_state()))

    def _batches(self):
        """One pass as Keras reads it; records the position after each batch."""
        resumed = self._resume
        if self._passes_restart and not resumed:
            self._iterator = None
        while True:
            self._resume = False
            if self._iterator is None:
                self._iterator = iter(self._data)
            try:
                batch = next(self._iterator)
            except StopIteration:
                if self._passes_restart:
                    self._iterator = None
                    if resumed:  # restored at the end of a pass: this pass is the next one
                        resumed = False
                        continue
                self._recent.append((self.handed, self.get_state()))
                return
            resumed = False
            self.handed += 1
            self._recent.append((self.handed, self.get_state()))
            yield batch

    def state_after(self, handed: int) -> dict:
        """The position after the first ``handed`` batches Keras was handed."""
        for count, state in reversed(self._recent):
            if count == handed:
                return state
        raise RuntimeError(
            f"spelt.keras: no position recorded after batch {handed} (recorded: "
            f"{[c for c, _ in self._recent]}); Keras read more than {_RECENT} batches ahead"
        )


class BackupAndRestore(keras.callbacks.BackupAndRestore):
    """Keras's ``BackupAndRestore`` that also saves and restores the data's position.

    Args:
        backup_dir: a local directory, as for Keras's callback; the data positions go to
            ``spelt_data_state.json`` there, beside Keras's weights and metadata.
        data: the ``Dataset`` (``spelt.keras.dataset(...)``) passed to ``fit``.
        double_checkpoint, delete_checkpoint: as for Keras's callback.

    Keras saves at the end of each epoch (``save_freq="epoch"``; Keras restarts an
    interrupted epoch from its first step, so positions within an epoch are not saved) and a
    restarted ``fit`` resumes at the first epoch not finished. This callback saves, keyed by
    that epoch, the position after the last batch trained (Keras's read-ahead excluded) and
    keeps the last two; on ``fit``'s start it restores the one of the epoch Keras resumes at.
    So an interrupted and resumed run trains on the same batches as one that was not
    interrupted, none twice and none skipped. With ``steps_per_epoch`` the data streams
    across epochs (repeat it); without, each epoch reads the dataset from its start (and
    resuming needs no position, but it is kept the same way).

    Raises:
        TypeError: ``data`` is not a ``spelt.keras.Dataset``.
        ValueError: on ``fit``'s start, if Keras resumes at an epoch whose position is not
            in the file (the file was removed or is of another run).

    Thread-safety: as Keras's callbacks (called by ``fit`` on its thread).
    """

    def __init__(self, backup_dir, data: Dataset, double_checkpoint=False, delete_checkpoint=True):
        if not isinstance(data, Dataset):
            raise TypeError(
                "spelt.keras.BackupAndRestore: data must be the spelt.keras.dataset(...) "
                f"passed to fit, not {type(data).__name__}"
            )
        super().__init__(
            backup_dir,
            save_freq="epoch",
            double_checkpoint=double_checkpoint,
            delete_checkpoint=delete_checkpoint,
        )
        self._data = data
        self._positions_path = os.path.join(backup_dir, "spelt_data_state.json")
        self._metadata_path = os.path.join(backup_dir, "training_metadata.json")
        self._base = 0  # batches handed to Keras before training began
        self._trained = 0  # batches trained in this fit
        self._epoch_start = 0

    def _positions(self) -> dict:
        if not os.path.exists(self._positions_path):
            return {}
        with open(self._positions_path) as f:
            return json.load(f)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)  # loads the weights, sets the epoch to resume at
        if os.path.exists(self._metadata_path):
            with open(self._metadata_path) as f:
                epoch = str(json.load(f)["epoch"])
            positions = self._positions()
            if epoch not in positions:
                raise ValueError(
                    f"spelt.keras.BackupAndRestore: Keras resumes at epoch {epoch} and "
                    f"{self._positions_path} has no data position for it (it has "
                    f"{sorted(positions)})"
                )
            self._data.set_state(positions[epoch])
        self._base = self._data.handed
        self._trained = self._epoch_start = 0

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self._epoch_start = self._trained

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        self._trained = self._epoch_start + batch + 1  # batch: the last step's index

    def on_epoch_end(self, epoch, logs=None):
        # The position first: a run killed between this write and Keras's finds the
        # position of the epoch Keras resumes at, whichever that is.
        positions = self._positions()
        positions[str(epoch + 1)] = self._data.state_after(self._base + self._trained)
        keep = sorted(positions, key=int)[-2:]
        os.makedirs(self.backup_dir, exist_ok=True)
        tmp = self._positions_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({k: positions[k] for k in keep}, f)
        os.replace(tmp, self._positions_path)
        super().on_epoch_end(epoch, logs)
