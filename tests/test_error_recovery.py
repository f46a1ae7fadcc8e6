"""An error loses nothing but its element (issue 19, item 8): an operation that buffers elements
(batch, window shuffle, rebatch) keeps those it had taken when an error of its parent passes
through it; the next next() goes on after the failing element, and the state taken after the
error is the one before the first kept element, so a restore delivers them too. Grain never
continues after such errors (docs/compatibility.md)."""

import functools
import os
import pathlib

import numpy as np
import pytest

import spelt


class Bad(Exception):
    pass


def _raise_at_9(x):
    if x == 9:
        raise Bad("element 9")
    return x


def _kill_once_at_5(marker: str, x):
    """Ends its worker process at element 5, the first time only (the marker file remembers)."""
    if x == 5 and not os.path.exists(marker):
        pathlib.Path(marker).touch()
        os._exit(1)  # pylint: disable=protected-access
    return x


class _MapOf(spelt.transforms.Map):
    def __init__(self, fn):
        self._fn = fn

    def map(self, element):
        return self._fn(element)


def _drain(it, errors=(Bad, RuntimeError)):
    """Every element of ``it``, catching up to 3 errors; and the state after each error."""
    out, states = [], []
    while True:
        try:
            out.append(next(it))
        except StopIteration:
            return out, states
        except errors:
            states.append(it.get_state())
            assert len(states) <= 3


def _flat(batches) -> list:
    return [int(x) for b in batches for x in np.asarray(b).ravel()]


def _failing(read_options=None):
    return spelt.MapDataset.range(20).map(_raise_at_9).to_iter_dataset(read_options)


@pytest.mark.parametrize("threads", [0, 4])
def test_a_batch_keeps_its_elements_across_an_error(threads):
    ds = _failing(spelt.ReadOptions(num_threads=threads)).batch(4)
    out, states = _drain(iter(ds))
    assert [list(b) for b in out] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 10, 11, 12],
        [13, 14, 15, 16],
        [17, 18, 19],
    ]
    assert states == [{"next_index": 8}]
    restored = iter(ds)
    restored.set_state(states[0])  # re-reads 8, then 9 fails again
    again, again_states = _drain(restored)
    assert [list(b) for b in again] == [list(b) for b in out[2:]]
    assert again_states == states


def test_a_window_shuffle_keeps_its_window_across_an_error():
    ds = spelt.experimental.WindowShuffleIterDataset(_failing(), window_size=6, seed=3)
    out, states = _drain(iter(ds))
    assert sorted(out) == [x for x in range(20) if x != 9]
    assert states[0]["parent_window_start_state"] == {"next_index": 6}
    restored = iter(ds)
    restored.set_state(states[0])
    again, _ = _drain(restored)
    assert sorted(again) == sorted(out[6:])


def test_a_rebatch_keeps_its_rows_across_an_error():
    ds = spelt.experimental.RebatchIterDataset(_failing().batch(2), batch_size=3)
    out, states = _drain(iter(ds))
    assert _flat(out) == [x for x in range(20) if x != 9]
    restored = iter(ds)
    restored.set_state(states[0])
    again, _ = _drain(restored)
    assert _flat(again) == _flat(out)[len(_flat(out)) - len(_flat(again)) :]
    assert 8 in _flat(again)  # the row taken before the error is delivered after a restore


def test_a_batch_above_workers_keeps_its_elements_when_a_worker_dies(tmp_path):
    f = functools.partial(_kill_once_at_5, str(tmp_path / "killed"))
    ds = (
        spelt.MapDataset.range(12)
        .map(f)
        .to_iter_dataset()
        .batch(4)
        .mp_prefetch(spelt.MultiprocessingOptions(num_workers=1))
    )
    it = iter(ds)
    out, states = _drain(it)
    it.close()
    assert (tmp_path / "killed").exists() and len(states) == 1
    assert _flat(out) == list(range(12))


def test_a_data_loader_batch_keeps_its_records_when_a_worker_dies(tmp_path):
    f = functools.partial(_kill_once_at_5, str(tmp_path / "killed"))
    loader = spelt.DataLoader(
        data_source=list(range(12)),
        sampler=spelt.samplers.SequentialSampler(12),
        operations=[_MapOf(f), spelt.transforms.Batch(4)],
        worker_count=1,
    )
    it = iter(loader)
    out, states = _drain(it)
    assert (tmp_path / "killed").exists() and len(states) == 1
    assert _flat(out) == list(range(12))
