"""ElasticIterator over an IterDataset built on an interleave of shards (upstream Grain after
0.2.18, google/grain b01eac4 and 549b383; Grain 0.2.18 has no such iterator, so the expected
values are those of upstream's elastic_iterator_test.py and elastic_checkpoint_test.py).

Resizing: hosts of one count run some steps and save; hosts of another count restore (from
``get_shard_states``, from the checkpoint handler's ``shard_state_<k>.json`` files, or through
the Orbax v1 ``save``/``load``) and run to the end; across the union of all hosts every
element is read exactly once.
"""

from __future__ import annotations

import asyncio
import collections
import json

import numpy as np
import pytest

import spelt
from pipelines import timeout  # noqa: F401  (autouse fixture)
from spelt import checkpoint
from spelt import sharding

NUM_SHARDS = 7


def _shards():
    """7 shards of different lengths (3 to 9 elements), the elements of shard s in
    [100 s, 100 s + 3 + s)."""
    return [
        spelt.MapDataset.range(100 * s, 100 * s + 3 + s).to_iter_dataset()
        for s in range(NUM_SHARDS)
    ]


ALL = sorted(x for s in range(NUM_SHARDS) for x in range(100 * s, 100 * s + 3 + s))


def _lazy_shards():
    """The shards of ``_shards`` as a lazy MapDataset of datasets."""
    return spelt.MapDataset.range(NUM_SHARDS).map(
        lambda s: spelt.MapDataset.range(100 * s, 100 * s + 3 + s).to_iter_dataset()
    )


def _elastic(index, count, global_batch_size=0, cycle_length=2, shards=_shards):
    ds = spelt.experimental.InterleaveIterDataset(shards(), cycle_length=cycle_length)
    return spelt.experimental.ElasticIterator(
        ds.map(lambda x: x + 0), global_batch_size, sharding.ShardOptions(index, count)
    )


def _flat(elements):
    return [int(x) for e in elements for x in np.atleast_1d(e)]


def _take(it, steps):
    return _flat(next(it) for _ in range(steps))


def _assert_once(*parts):
    counts = collections.Counter(x for part in parts for x in part)
    assert sorted(counts) == ALL, "elements lost or invented"
    assert [x for x, c in counts.items() if c > 1] == [], "elements read twice"


@pytest.mark.parametrize(
    "shard_options, global_batch_size, expected",
    [
        (sharding.NoSharding(), 1, [[x] for x in range(15)]),
        (sharding.ShardOptions(0, 1), 1, [[x] for x in range(15)]),
        (sharding.NoSharding(), 3, [[i, i + 5, i + 10] for i in range(5)]),
    ],
)
def test_no_sharding_produces_upstreams_elements(shard_options, global_batch_size, expected):
    ds = [spelt.MapDataset.range(i * 5, (i + 1) * 5).to_iter_dataset() for i in range(3)]
    interleaved = spelt.experimental.InterleaveIterDataset(ds, cycle_length=global_batch_size)
    it = spelt.experimental.ElasticIterator(interleaved, global_batch_size, shard_options)
    assert [x.tolist() for x in it] == expected


@pytest.mark.parametrize(
    "index, global_batch_size, expected",
    [
        (0, 2, [[0], [2], [4], [6], [8]]),
        (1, 0, [1, 3, 5, 7, 9]),
        (0, 4, [[0, 2], [4, 6], [8]]),
    ],
)
def test_sharding_produces_upstreams_elements(index, global_batch_size, expected):
    ds = [spelt.MapDataset.range(i, 10, 4).to_iter_dataset() for i in range(4)]
    interleaved = spelt.experimental.InterleaveIterDataset(ds, cycle_length=2)
    it = spelt.experimental.ElasticIterator(
        interleaved, global_batch_size, sharding.ShardOptions(index, 2)
    )
    out = list(it)
    assert [np.asarray(x).tolist() for x in out] == expected


def test_errors_are_upstreams():
    interleaved = spelt.experimental.InterleaveIterDataset(_shards(), cycle_length=2)
    with pytest.raises(ValueError, match="Global batch size 3 is not divisible by shard count 2"):
        spelt.experimental.ElasticIterator(interleaved, 3, sharding.ShardOptions(0, 2))
    plain = spelt.MapDataset.range(10).to_iter_dataset().map(lambda x: x)
    with pytest.raises(ValueError, match="zip, mix or prefetch"):
        spelt.experimental.ElasticIterator(plain, 2, sharding.ShardOptions(0, 2))
    with pytest.raises(ValueError, match="zip, mix or prefetch"):
        spelt.experimental.ElasticIterator(
            spelt.IterDataset.mix([interleaved, interleaved]), 2, sharding.NoSharding()
        )
    with pytest.raises(NotImplementedError, match="multiprocess prefetching for IterDataset"):
        spelt.experimental.ElasticIterator(
            interleaved,
            2,
            sharding.NoSharding(),
            multiprocessing_options=spelt.MultiprocessingOptions(num_workers=1),
        )
    elastic_map = spelt.experimental.ElasticIterator(
        spelt.MapDataset.range(10), 2, sharding.NoSharding()
    )
    with pytest.raises(NotImplementedError, match="get_shard_states is only supported"):
        elastic_map.get_shard_states()
    with pytest.raises(NotImplementedError, match="set_shard_states is only supported"):
        elastic_map.set_shard_states({})


def test_requires_an_interleave():
    """A pipeline of a source that slices itself (``set_slice``, as a Parquet dataset) but
    has no interleave."""

    class Sliceable(spelt.IterDataset):
        def __init__(self):
            super().__init__()

        def set_slice(self, sl, sequential_slice=False):
            del sl, sequential_slice

        def __iter__(self):
            return iter(spelt.MapDataset.range(4).to_iter_dataset())

    with pytest.raises(ValueError, match="requires an InterleaveIterDataset in the dataset graph"):
        spelt.experimental.ElasticIterator(Sliceable().map(lambda x: x), 2, sharding.NoSharding())


def test_get_set_state_and_string_keys_restore_the_same_host():
    it = _elastic(1, 2, global_batch_size=4)
    _take(it, 2)
    state, shard_states = it.get_state(), it.get_shard_states()
    assert sorted(shard_states) == [1, 3, 5]  # the global shards of host 1 of 2
    rest = _flat(it)
    again = _elastic(1, 2, global_batch_size=4)
    again.set_state(state)
    assert _flat(again) == rest
    by_shards = _elastic(1, 2, global_batch_size=4)
    by_shards.set_shard_states(json.loads(json.dumps(shard_states)))  # string keys
    assert sorted(_flat(by_shards)) == sorted(rest)


def test_state_after_a_resize_restores_on_the_same_count():
    """After a restore on another count that left exhausted shards out, the state (process
    file) restores that host again: the same remaining elements, in the same order."""
    hosts = [_elastic(i, 2) for i in range(2)]
    for it in hosts:
        _take(it, 9)
    union = {k: s for it in hosts for k, s in it.get_shard_states().items()}
    assert union[0]["exhausted"] and union[1]["exhausted"]
    it = _elastic(0, 1)
    it.set_shard_states(union)
    _take(it, 2)
    state = json.loads(json.dumps(it.get_state()))
    assert sorted(state["spelt_exhausted_shards"]) == ["0", "1"]
    rest = _flat(it)
    again = _elastic(0, 1)
    again.set_state(state)
    assert _flat(again) == rest
    assert again.get_shard_states()[0] == union[0]


def test_set_shard_states_refuses_other_shards():
    it = _elastic(0, 2)
    with pytest.raises(ValueError, match=r"reads global shards \[0, 2, 4, 6\], got .*\[0, 2\]"):
        it.set_shard_states({0: it.get_shard_states()[0], 2: it.get_shard_states()[2]})


RESIZES = [(2, 1), (1, 2), (2, 3), (3, 2), (3, 1)]


@pytest.mark.parametrize("shards", [_shards, _lazy_shards])
@pytest.mark.parametrize("steps", [3, 9])  # after 9 steps, exhausted shards are out of the cycle
@pytest.mark.parametrize("before, after", RESIZES)
def test_shard_states_redistribute_every_element_once(before, after, steps, shards):
    hosts = [_elastic(i, before, before, shards=shards) for i in range(before)]
    read = [_take(it, steps) for it in hosts]
    assert any(s["exhausted"] for it in hosts for s in it.get_shard_states().values()) == (
        steps == 9
    )
    union = {}
    for it in hosts:
        union.update(it.get_shard_states())
    assert sorted(union) == list(range(NUM_SHARDS))
    for i in range(after):
        it = _elastic(i, after, after, shards=shards)
        it.set_shard_states({k: s for k, s in union.items() if k % after == i})
        read.append(_flat(it))
    _assert_once(*read)


@pytest.fixture
def process(monkeypatch):
    """Fakes this process's index and count (JAX's) for the checkpoint files."""

    def set_process(index, count):
        monkeypatch.setattr(sharding, "get_process_index_and_count", lambda: (index, count))

    return set_process


def _save_on(before, directory, process, save):
    read = []
    for i in range(before):
        process(i, before)
        it = _elastic(i, before, global_batch_size=before)
        read.append(_take(it, 3))
        save(directory, it)
    return read


def _handler_save(directory, it):
    checkpoint.CheckpointHandler().save(directory, it)


def _handler_restore(directory, it):
    checkpoint.CheckpointHandler().restore(directory, it)


def _v1_save(directory, it):
    async def save():
        await (await it.save(directory))

    asyncio.run(save())


def _v1_restore(directory, it):
    async def load():
        await (await it.load(directory))

    asyncio.run(load())


@pytest.mark.parametrize("api", ["handler", "orbax_v1"])
@pytest.mark.parametrize("before, after", RESIZES)
def test_checkpoint_restores_on_another_process_count(tmp_path, process, api, before, after):
    save, restore = (
        (_handler_save, _handler_restore) if api == "handler" else (_v1_save, _v1_restore)
    )
    read = _save_on(before, tmp_path, process, save)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(
        [f"process_{i}-of-{before}.json" for i in range(before)]
        + [f"shard_state_{k}.json" for k in range(NUM_SHARDS)]
    )
    for i in range(after):
        process(i, after)
        it = _elastic(i, after, global_batch_size=after)
        restore(tmp_path, it)
        read.append(_flat(it))
    _assert_once(*read)


def test_shard_files_hold_upstreams_json(tmp_path, process):
    process(1, 2)
    it = _elastic(1, 2, global_batch_size=2)
    _take(it, 2)
    checkpoint.CheckpointHandler().save(tmp_path, it)
    for k, state in it.get_shard_states().items():
        assert (tmp_path / f"shard_state_{k}.json").read_text() == json.dumps(state, indent=4)
    assert json.loads((tmp_path / "process_1-of-2.json").read_text()) == it.get_state()
    # shards 1, 3, 5 (host 1 of 2): 1 and 3 in the cycle after 2 steps of one element.
    assert json.loads((tmp_path / "shard_state_1.json").read_text()) == {
        "exhausted": 0,
        "state": {"next_index": 1},
    }
    assert json.loads((tmp_path / "shard_state_5.json").read_text()) == {
        "exhausted": 0,
        "state": {"next_index": 0},
    }


def test_same_process_count_restores_the_process_file(tmp_path, process):
    process(0, 2)
    it = _elastic(0, 2)
    _take(it, 3)
    checkpoint.CheckpointHandler().save(tmp_path, it)
    rest = _flat(it)
    (tmp_path / "shard_state_0.json").unlink()  # not read on the same process count
    again = _elastic(0, 2)
    checkpoint.CheckpointHandler().restore(tmp_path, again)
    assert _flat(again) == rest  # the same order: the pipeline's own state


def test_upstream_checkpoint_restores_in_spelt(tmp_path, process):
    """Files as upstream's save_elastic_iterator writes them (two processes, each shard's
    ``{"exhausted", "state"}`` with indent 4), restored by one Spelt process."""
    consumed = {0: 2, 1: 3, 2: 3, 3: 0, 4: 1, 5: 8, 6: 0}  # shard 5 (8 elements) exhausted
    for k, n in consumed.items():
        state = {"exhausted": int(n == 3 + k), "state": {"next_index": n}}
        (tmp_path / f"shard_state_{k}.json").write_text(json.dumps(state, indent=4))
    for i in range(2):
        (tmp_path / f"process_{i}-of-2.json").write_text("{}")
    process(0, 1)
    it = _elastic(0, 1, cycle_length=3)
    checkpoint.CheckpointHandler().restore(tmp_path, it)
    expected = [x for k, n in consumed.items() for x in range(100 * k + n, 100 * k + 3 + k)]
    assert sorted(_flat(it)) == expected


def test_missing_shard_file_names_it(tmp_path, process):
    (tmp_path / "process_0-of-3.json").write_text("{}")
    process(1, 2)
    with pytest.raises(ValueError, match=r"shard_state_1\.json does not exist"):
        checkpoint.CheckpointHandler().restore(tmp_path, _elastic(1, 2))
