"""Keras runs for tests/torch_keras/test_keras.py, each in a fresh process (the test process
hides jax, which Keras's JAX backend needs; tests/conftest.py says why).

``python keras_steps.py LIB KIND EPOCHS STEPS_PER_EPOCH [CALLBACK BACKUP_DIR [KILL]]`` builds
the same tiny regression pipeline with LIB (``spelt`` or ``grain``) as KIND (``map``: a
MapDataset of batches, ``iter``: an IterDataset, ``loader``: a DataLoader, ``stream``: a
repeated MapDataset of batches, ``stream-after-1``: that without its first batch,
``iterator``: an iterator of the stream), trains a seeded model
for EPOCHS (STEPS_PER_EPOCH 0: until the data ends) on ``spelt.keras.dataset(...)`` (Spelt) or
the object itself (Grain), then evaluates and predicts on the ``map`` pipeline. It prints one
JSON object: the final weights, per-epoch losses, the evaluation loss and the predictions.
CALLBACK ``spelt`` or ``keras`` adds that BackupAndRestore on BACKUP_DIR; KILL ``E:B`` ends
the process with ``os._exit(17)`` after batch B of epoch E has trained (B ``end``: after the
epoch's end, once the backup is written), as a preempted job would stop.
"""

import json
import os
import sys

import keras
import numpy as np

RECORDS = 84
BATCH = 8
_rng = np.random.default_rng(0)
X = _rng.normal(size=(RECORDS, 4)).astype(np.float32)
Y = (X @ np.array([0.5, -1.0, 2.0, 0.25], np.float32) + 0.1)[:, None].astype(np.float32)


def _record(i):
    return X[i], Y[i]


def records(g):
    return g.MapDataset.range(RECORDS).seed(7).shuffle().map(_record)


def pipeline(g, kind):
    if kind == "map":
        return records(g).batch(BATCH)
    if kind == "iter":
        return records(g).to_iter_dataset().filter(lambda r: r[1][0] > -3.0).batch(BATCH)
    if kind == "loader":
        return g.DataLoader(
            data_source=[(X[i], Y[i]) for i in range(RECORDS)],
            sampler=g.samplers.IndexSampler(RECORDS, shuffle=True, seed=3, num_epochs=1),
            operations=[g.transforms.Batch(BATCH)],
        )
    if kind == "stream":
        return records(g).repeat().batch(BATCH)
    if kind == "stream-after-1":  # the stream without its first batch
        return records(g).repeat().batch(BATCH)[1:]
    if kind == "iterator":
        return iter(records(g).repeat().batch(BATCH))
    raise ValueError(kind)


def model():
    keras.utils.set_random_seed(0)
    m = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)]
    )
    m.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return m


class Kill(keras.callbacks.Callback):
    def __init__(self, when):
        super().__init__()
        epoch, batch = when.split(":")
        self._epoch, self._batch, self._current = int(epoch), batch, -1

    def on_epoch_begin(self, epoch, logs=None):
        self._current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._current == self._epoch and self._batch != "end" and batch == int(self._batch):
            os._exit(17)

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self._epoch and self._batch == "end":
            os._exit(17)


def main(lib, kind, epochs, steps_per_epoch, callback=None, backup_dir=None, kill=None):
    if lib == "spelt":
        import spelt as g
        import spelt.keras

        wrap = spelt.keras.dataset
    else:
        import grain as g

        def wrap(data):
            return data

    data = wrap(pipeline(g, kind))
    callbacks = []
    if callback == "spelt":
        callbacks.append(spelt.keras.BackupAndRestore(backup_dir, data))
    elif callback == "keras":
        callbacks.append(keras.callbacks.BackupAndRestore(backup_dir))
    if kill:
        callbacks.append(Kill(kill))
    m = model()
    history = m.fit(
        data,
        epochs=int(epochs),
        steps_per_epoch=int(steps_per_epoch) or None,
        callbacks=callbacks,
        shuffle=False,
        verbose=0,
    )
    evaluation = wrap(pipeline(g, "map"))
    result = {
        "weights": [w.tolist() for w in m.get_weights()],
        "losses": history.history["loss"],
        "evaluate": m.evaluate(evaluation, verbose=0),
        "predict": m.predict(wrap(pipeline(g, "map")), verbose=0).tolist(),
        "state": data.get_state() if lib == "spelt" else None,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:])
