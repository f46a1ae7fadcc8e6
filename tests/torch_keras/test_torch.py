"""spelt.torch with the CPU build of torch (`make test-torch`): tensors without a copy, shards
by rank (explicit, and two gloo processes on loopback), exact resume from a saved state_dict
(also through torch.distributed.checkpoint), and the pinned-memory thread."""

from __future__ import annotations

import collections
import json
import multiprocessing
import socket

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.stateful import Stateful

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
import spelt.torch
from spelt.sharding import ShardOptions

Pair = collections.namedtuple("Pair", ["image", "label"])


def _record(i):
    return {"image": np.full((2, 3), i, np.float32), "label": np.int64(i)}


def _batches():  # 25 records, shuffled, batches of 4 (the last one of 1)
    return spelt.MapDataset.range(25).seed(3).shuffle().map(_record).batch(4)


def _iter_pipeline():  # Python per record, random, filtered: an IterDataset
    ds = spelt.MapDataset.range(60).seed(5).shuffle()
    ds = ds.random_map(lambda x, rng: x * 100 + int(rng.integers(0, 100)))
    return ds.filter(lambda x: x % 3 != 0).to_iter_dataset().batch(5)


def _loader(shard=spelt.sharding.NoSharding(), worker_count=0):
    return spelt.DataLoader(
        data_source=[np.arange(3, dtype=np.int32) + i for i in range(30)],
        sampler=spelt.samplers.IndexSampler(30, shard, shuffle=True, seed=1, num_epochs=2),
        operations=[spelt.transforms.Batch(4)],
        worker_count=worker_count,
    )


def _labels(dataset):
    return [int(v) for batch in dataset for v in batch["label"]]


def _as_lists(element):
    if isinstance(element, dict):
        return {k: _as_lists(v) for k, v in element.items()}
    return element.tolist()


# ---- to_torch -------------------------------------------------------------------------------


def test_to_torch_shares_memory_and_keeps_the_structure():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(4, dtype=np.uint8)
    tree = {"x": [a, (b, "name")], "pair": Pair(np.int64(7), None)}
    out = spelt.torch.to_torch(tree)
    assert list(out) == ["x", "pair"] and isinstance(out["x"], list)
    assert isinstance(out["x"][1], tuple) and out["x"][1][1] == "name"
    assert isinstance(out["pair"], Pair) and out["pair"].label is None
    assert out["pair"].image.dtype == torch.int64 and out["pair"].image.shape == ()
    t = out["x"][0]
    assert t.dtype == torch.float32 and t.shape == (2, 3) and t.data_ptr() == a.ctypes.data
    a[1, 2] = -1.0  # a view: the tensor sees the write
    assert t[1, 2].item() == -1.0
    assert out["x"][1][0].dtype == torch.uint8 and out["x"][1][0].data_ptr() == b.ctypes.data


def test_to_torch_strided_views_bfloat16_strings_and_errors():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    t = spelt.torch.to_torch(a)
    assert t.stride() == (4, 2) and t.tolist() == a.tolist() and t.data_ptr() == a.ctypes.data
    bf = np.array([1.5, -2.0], ml_dtypes.bfloat16)
    t = spelt.torch.to_torch(bf)
    assert t.dtype == torch.bfloat16 and t.tolist() == [1.5, -2.0]
    assert t.data_ptr() == bf.ctypes.data
    words = np.array(["a", "bc"])
    assert spelt.torch.to_torch({"w": words})["w"] is words
    with pytest.raises(TypeError, match="float4_e2m1fn has no usable torch dtype"):
        spelt.torch.to_torch(np.zeros(2, ml_dtypes.float4_e2m1fn))


@pytest.mark.parametrize("name", ["int4", "uint4", "int2", "uint2"])
def test_to_torch_refuses_sub_byte_integer_dtypes(name):
    # torch's shell dtypes of these names (if any) have no arithmetic: a TypeError, not a tensor
    with pytest.raises(TypeError, match=f"dtype {name} has no usable torch dtype"):
        spelt.torch.to_torch({"x": np.zeros(3, getattr(ml_dtypes, name))})


def test_batches_of_a_pipeline_are_views_of_its_arrays():
    numpy_batches = list(_batches())
    ds = spelt.torch.IterableDataset(_batches())
    torch_batches = list(ds)
    assert len(torch_batches) == 7
    for n, t in zip(numpy_batches, torch_batches):
        assert t["image"].dtype == torch.float32 and t["label"].dtype == torch.int64
        assert _as_lists(t) == _as_lists(n)
    loader_batches = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0))
    assert [_as_lists(b) for b in loader_batches] == [_as_lists(b) for b in numpy_batches]


# ---- sharding -------------------------------------------------------------------------------


def test_map_dataset_shards_are_disjoint_and_cover_it():
    records = spelt.MapDataset.range(25).seed(3).shuffle().map(_record)
    shards = [
        [int(e["label"]) for e in spelt.torch.IterableDataset(records, shard_options=so)]
        for so in (ShardOptions(0, 2), ShardOptions(1, 2))
    ]
    assert len(shards[0]) == 13 and len(shards[1]) == 12
    assert sorted(shards[0] + shards[1]) == list(range(25))
    dropped = [
        len(list(spelt.torch.IterableDataset(records, shard_options=ShardOptions(k, 3, True))))
        for k in range(3)
    ]
    assert dropped == [8, 8, 8]


def test_built_iter_pipelines_are_sharded_by_a_function_of_shard_options():
    with pytest.raises(ValueError, match="cannot be sharded once built"):
        spelt.torch.IterableDataset(_iter_pipeline(), shard_options=ShardOptions(1, 2))
    with pytest.raises(ValueError, match="cannot be sharded once built"):
        spelt.torch.IterableDataset(_loader(), shard_options=ShardOptions(0, 2))
    assert len(list(spelt.torch.IterableDataset(_iter_pipeline()))) == len(list(_iter_pipeline()))
    seen = []
    for k in range(2):
        ds = spelt.torch.IterableDataset(_loader, shard_options=ShardOptions(k, 2))
        assert ds.shard == ShardOptions(k, 2)
        seen.append([row.tolist() for batch in ds for row in batch])
    assert not any(row in seen[1] for row in seen[0])
    assert sorted(seen[0] + seen[1]) == sorted([[i, i + 1, i + 2] for i in range(30)] * 2)
    with pytest.raises(TypeError, match="returned a list"):
        spelt.torch.IterableDataset(lambda shard: [1, 2])
    with pytest.raises(TypeError, match="data must be"):
        spelt.torch.IterableDataset([1, 2])


def _rank_main(rank, port, results):
    torch.distributed.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2
    )
    try:
        assert spelt.torch.shard_options() == ShardOptions(rank, 2)
        records = spelt.MapDataset.range(25).seed(3).shuffle().map(_record)
        mine = [int(e["label"]) for e in spelt.torch.IterableDataset(records)]
        everyone = [None, None]
        torch.distributed.all_gather_object(everyone, mine)
        results.put((rank, everyone))
    finally:
        torch.distributed.destroy_process_group()


def test_two_gloo_ranks_read_disjoint_shards():
    assert spelt.torch.shard_options() == ShardOptions(0, 1)  # not initialized: one shard
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=_rank_main, args=(r, port, results)) for r in range(2)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert got[0] == got[1]  # both ranks gathered the same lists
    rank0, rank1 = got[0]
    assert len(rank0) == 13 and len(rank1) == 12 and sorted(rank0 + rank1) == list(range(25))


# ---- state_dict -----------------------------------------------------------------------------

PIPELINES = {
    "map": lambda: spelt.torch.IterableDataset(_batches()),
    "iter": lambda: spelt.torch.IterableDataset(_iter_pipeline()),
    "loader": lambda: spelt.torch.IterableDataset(_loader()),
    "loader-2-workers": lambda: spelt.torch.IterableDataset(_loader(worker_count=2)),
}


@pytest.mark.parametrize("name", PIPELINES)
def test_a_restored_iterator_continues_exactly(name):
    make = PIPELINES[name]
    expected = [_as_lists(b) for b in make()]
    it = iter(make())
    first = [_as_lists(next(it)) for _ in range(3)]
    state = json.loads(json.dumps(it.state_dict()))  # JSON-able
    assert state["version"] == 1 and state["shard"] == {"index": 0, "count": 1}
    restored = iter(make())
    restored.load_state_dict(state)
    assert first + [_as_lists(b) for b in restored] == expected
    it.load_state_dict(state)  # and back: the same iterator moved to the state
    assert first + [_as_lists(b) for b in it] == expected


def test_loader_state_dict_is_its_latest_iterators():
    ds = spelt.torch.IterableDataset(_iter_pipeline())
    start = ds.state_dict()
    it = iter(ds)
    head = [_as_lists(next(it)) for _ in range(2)]
    saved = ds.state_dict()
    assert saved == it.state_dict() != start
    fresh = spelt.torch.IterableDataset(_iter_pipeline())
    fresh.load_state_dict(saved)
    assert fresh.state_dict() == saved  # before iter(): the loaded one
    tail = [_as_lists(b) for b in fresh]
    assert head + tail == [_as_lists(b) for b in _iter_pipeline()]


def test_states_of_another_shard_or_kind_are_refused():
    records = spelt.MapDataset.range(10)
    state = iter(spelt.torch.IterableDataset(records, shard_options=ShardOptions(0, 2)))
    other = spelt.torch.IterableDataset(records, shard_options=ShardOptions(1, 2))
    with pytest.raises(ValueError, match="of shard"):
        other.load_state_dict(state.state_dict())
    with pytest.raises(ValueError, match="not a state_dict of spelt.torch"):
        iter(other).load_state_dict({"next_index": 3})


def test_torch_distributed_checkpoint_saves_and_restores_the_position(tmp_path):
    ds = spelt.torch.IterableDataset(_loader())
    assert isinstance(ds, Stateful)
    it = iter(ds)
    head = [next(it).tolist() for _ in range(4)]
    dcp.save({"data": ds}, checkpoint_id=str(tmp_path))
    restored = spelt.torch.IterableDataset(_loader())
    dcp.load({"data": restored}, checkpoint_id=str(tmp_path))
    assert head + [b.tolist() for b in restored] == [b.tolist() for b in _loader()]


def test_torch_dataloader_workers_are_refused():
    loader = torch.utils.data.DataLoader(
        spelt.torch.IterableDataset(_batches()), batch_size=None, num_workers=1
    )
    with pytest.raises(RuntimeError, match="torch DataLoader worker"):
        next(iter(loader))


# ---- pinned memory --------------------------------------------------------------------------


def test_pin_memory_without_an_accelerator_is_an_error():
    assert not torch.cuda.is_available()  # the CPU build of torch
    with pytest.raises(RuntimeError, match="pin_memory=True needs an accelerator"):
        spelt.torch.IterableDataset(_batches(), pin_memory=True)


@pytest.fixture
def fake_pinning(monkeypatch):
    """The pinning thread, with "pinning" a copy (the CPU build has no page-locked memory)."""
    monkeypatch.setattr(spelt.torch, "_accelerator_available", lambda: True)
    monkeypatch.setattr(
        spelt.torch, "_pin", lambda leaf: leaf.clone() if isinstance(leaf, torch.Tensor) else leaf
    )


def test_pinning_thread_yields_copies_in_order_and_counts_only_returned_elements(fake_pinning):
    expected = [_as_lists(b) for b in _iter_pipeline()]
    it = iter(spelt.torch.IterableDataset(_iter_pipeline(), pin_memory=True))
    head = [_as_lists(next(it)) for _ in range(3)]
    state = it.state_dict()  # the thread has read ahead; the state is after element 3
    rest = [_as_lists(b) for b in it]
    assert head + rest == expected
    it.load_state_dict(state)  # stops the ended thread; the next next() starts another
    assert [_as_lists(b) for b in it] == rest
    restored = iter(spelt.torch.IterableDataset(_iter_pipeline()))
    restored.load_state_dict(state)  # a pinned iterator's state restores an unpinned one
    assert [_as_lists(b) for b in restored] == rest
    with pytest.raises(StopIteration):
        next(it)
    it.load_state_dict(state)
    assert _as_lists(next(it)) == rest[0]
    it.close()  # drops what the thread read ahead, and goes on after the element returned
    assert [_as_lists(b) for b in it] == rest[1:]


def test_pinning_thread_hands_errors_to_the_consumer(fake_pinning):
    def fail_at_7(x):
        if x == 7:
            raise KeyError("record 7")
        return np.int64(x)

    ds = spelt.MapDataset.range(10).map(fail_at_7).to_iter_dataset()
    it = iter(spelt.torch.IterableDataset(ds, pin_memory=True))
    assert [next(it).item() for _ in range(7)] == list(range(7))
    with pytest.raises(KeyError, match="record 7"):
        next(it)
    it.close()
