"""VirtualShardIterDataset (spelt.experimental): elastic resume of pipelines with ``filter``,
packing (first-fit, best-fit, concat-then-split), ``mix`` and of an interleave of files
(beyond Grain's ElasticIterator). N hosts are simulated in one process
(``ShardOptions(h, N)``), and through the per-process checkpoint files by faking the process
index and count. A checkpoint of N hosts restored on M hosts (2 -> 1, 2 -> 3, 4 -> 2, 1 -> 2)
gives, over the union of hosts before and after, every output of the uninterrupted run exactly
once; on the same host count every host's outputs are exactly those of the uninterrupted run."""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import pathlib
import threading

import numpy as np
import pytest

import spelt
from pipelines import timeout  # noqa: F401  (autouse fixture)

K = 12  # virtual shards: a multiple of 1, 2, 3 and 4 hosts
PAIRS = [(2, 1), (2, 3), (4, 2), (1, 2), (3, 3)]


def _records(n, offset=0):
    """Sequences of 1 to 5 tokens; every token of record r is 1000 * r + position + 1."""
    return spelt.MapDataset.range(offset, offset + n).map(
        lambda r: {"tokens": np.arange(r % 5 + 1, dtype=np.int64) + 1000 * r + 1}
    )


def _filter(s):
    ds = spelt.MapDataset.range(100)[s.shard_index :: s.shard_count]
    return ds.to_iter_dataset().filter(lambda x: x % 7 != 3).map(lambda x: x * 10)


def _mix(s):
    a = spelt.MapDataset.range(90)[s.shard_index :: s.shard_count].to_iter_dataset()
    b = spelt.MapDataset.range(1000, 1050)[s.shard_index :: s.shard_count].to_iter_dataset()
    return spelt.IterDataset.mix([a, b.filter(lambda x: x % 4 != 1)], [0.6, 0.4])


def _first_fit(s):
    shard = _records(80)[s.shard_index :: s.shard_count].to_iter_dataset()
    return spelt.experimental.FirstFitPackIterDataset(
        shard, length_struct={"tokens": 8}, num_packing_bins=2
    )


def _best_fit(s):
    shard = _records(80)[s.shard_index :: s.shard_count].to_iter_dataset()
    return spelt.experimental.BestFitPackIterDataset(
        shard, length_struct={"tokens": 8}, num_packing_bins=3
    )


# An interleave of files: K files of different lengths, virtual shard v being file v.
FILES = [spelt.MapDataset.range(100 * v, 100 * v + 3 + v).to_iter_dataset() for v in range(K)]


def _interleave(s):
    return FILES[s.shard_index]


def _concat_then_split(s):
    shard = _records(80)[s.shard_index :: s.shard_count].to_iter_dataset()
    return spelt.experimental.ConcatThenSplitIterDataset(shard, length_struct={"tokens": 7})


PIPELINES = {
    "filter": (_filter, {}),
    "mix": (_mix, {}),
    "first_fit": (_first_fit, {}),
    "best_fit": (_best_fit, {}),
    "interleave": (_interleave, {}),
    "concat_then_split": (_concat_then_split, {}),
    "filter_batched": (_filter, {"batch_size": 3}),
    "mix_batched": (_mix, {"batch_size": 2}),
}
DROPPING = {"filter_batched_dropping": (_filter, {"batch_size": 4, "drop_remainder": True})}


def _host(name, index, count):
    make, kwargs = {**PIPELINES, **DROPPING}[name]
    options = spelt.sharding.ShardOptions(index, count)
    return iter(spelt.experimental.VirtualShardIterDataset(make, K, options, **kwargs))


def _key(output):
    """A hashable form of an output (an int, or a dict of arrays), exact to the bytes."""
    if isinstance(output, dict):
        return tuple((k, np.asarray(v).tobytes()) for k, v in sorted(output.items()))
    return np.asarray(output).tobytes()


def _elements(name, outputs):
    """The keys of the elements in ``outputs`` of pipeline ``name``: the outputs, or the rows
    of its batches."""
    if "batch_size" not in PIPELINES[name][1]:
        return [_key(x) for x in outputs]
    return [_key(row) for batch in outputs for row in batch]


def _expected(name):
    """The elements of the uninterrupted run over all hosts: those of every shard's pipeline."""
    make, _ = PIPELINES[name]
    elements = collections.Counter()
    for h in range(2):
        elements.update(_elements(name, _host(name, h, 2)))
    singles = collections.Counter()
    for v in range(K):
        singles.update(_key(x) for x in make(spelt.sharding.ShardOptions(v, K)))
    assert elements == singles
    return elements


def _lost_and_repeated(name, saved_on, restored_on, steps):
    """Runs ``name`` on ``saved_on`` hosts (host h takes ``steps + h`` steps), merges their
    states, restores on ``restored_on`` hosts and runs them to the end. Returns the outputs lost
    and repeated against the uninterrupted run (Counters)."""
    seen = collections.Counter()
    states = []
    for h in range(saved_on):
        it = _host(name, h, saved_on)
        seen.update(_elements(name, itertools.islice(it, steps + h)))
        states.append(json.loads(json.dumps(it.get_state())))  # as a checkpoint file holds it
    merged = spelt.experimental.VirtualShardIterDataset.merge_states(states[::-1])
    for h in range(restored_on):
        it = _host(name, h, restored_on)
        it.set_state(merged)
        seen.update(_elements(name, it))
    expected = _expected(name)
    return expected - seen, seen - expected


@pytest.mark.parametrize("saved_on,restored_on", PAIRS)
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_every_output_once_across_host_counts(name, saved_on, restored_on):
    lost, repeated = _lost_and_repeated(name, saved_on, restored_on, steps=5)
    assert (sum(lost.values()), sum(repeated.values())) == (0, 0)


@pytest.mark.parametrize("name", sorted(PIPELINES))
@pytest.mark.parametrize("count", [1, 2, 4])
def test_same_host_count_resumes_in_the_same_order(name, count):
    for h in range(count):
        uninterrupted = [_key(x) for x in _host(name, h, count)]
        for step in sorted({0, 1, min(7, len(uninterrupted)), len(uninterrupted)}):
            it = _host(name, h, count)
            before = [_key(next(it)) for _ in range(step)]
            restored = _host(name, h, count)
            restored.set_state(json.loads(json.dumps(it.get_state())))
            assert before + [_key(x) for x in restored] == uninterrupted


@pytest.mark.parametrize("name", ["filter_batched", "mix_batched", "filter_batched_dropping"])
def test_batches_are_those_of_each_shard_on_every_host_count(name):
    """Batches are cut in each virtual shard: 1, 2, 3 or 4 hosts read the same batches, each
    holding consecutive elements of one shard's pipeline (with drop_remainder, each shard's
    last partial batch is dropped), also across a restore from 2 hosts on 3."""
    make, kwargs = {**PIPELINES, **DROPPING}[name]
    size, drop = kwargs["batch_size"], kwargs.get("drop_remainder", False)
    per_shard = collections.Counter()
    for v in range(K):
        elements = list(make(spelt.sharding.ShardOptions(v, K)))
        stop = len(elements) - len(elements) % size if drop else len(elements)
        per_shard.update(_key(np.array(elements[i : i + size])) for i in range(0, stop, size))
    for count in (1, 2, 3, 4):
        batches = collections.Counter(_key(b) for h in range(count) for b in _host(name, h, count))
        assert batches == per_shard
    batches, states = collections.Counter(), []
    for h in range(2):
        it = _host(name, h, 2)
        batches.update(_key(b) for b in itertools.islice(it, 3))
        states.append(it.get_state())
    for h in range(3):
        it = _host(name, h, 3)
        it.set_state(spelt.experimental.VirtualShardIterDataset.merge_states(states))
        batches.update(_key(b) for b in it)
    assert batches == per_shard


def test_records_of_packs_are_each_read_once():
    """Packing across a change of host count keeps every record whole and once: the records'
    tokens, read back from the packs of 2 hosts restored on 3, are all records' tokens."""
    seen = []
    states = []
    for h in range(2):
        it = _host("first_fit", h, 2)
        for _ in range(4):
            seen.append(next(it))
        states.append(it.get_state())
    merged = spelt.experimental.VirtualShardIterDataset.merge_states(states)
    for h in range(3):
        it = _host("first_fit", h, 3)
        it.set_state(merged)
        seen.extend(it)
    tokens = np.concatenate([p["tokens"][p["tokens_segment_ids"] > 0] for p in seen])
    expected = np.concatenate([_records(80)[r]["tokens"] for r in range(80)])
    np.testing.assert_array_equal(np.sort(tokens), np.sort(expected))


def test_state_holds_this_hosts_shards():
    it = _host("filter", 1, 4)
    assert next(it) == 10 * 1 and next(it) == 10 * 5  # shard 1's 1, then shard 5's 5
    state = it.get_state()
    assert state["num_virtual_shards"] == K
    assert (state["shard_index"], state["shard_count"], state["next_shard"]) == (1, 4, 9)
    assert sorted(state["shards"], key=int) == ["1", "5", "9"]


def test_errors():
    with pytest.raises(ValueError, match="at least the shard count"):
        spelt.experimental.VirtualShardIterDataset(_filter, 2, spelt.sharding.ShardOptions(0, 3))
    with pytest.raises(TypeError, match="num_virtual_shards must be an int"):
        spelt.experimental.VirtualShardIterDataset(_filter, 2.0, spelt.sharding.NoSharding())
    with pytest.raises(ValueError, match="batch_size must be positive"):
        spelt.experimental.VirtualShardIterDataset(
            _filter, 2, spelt.sharding.NoSharding(), batch_size=0
        )
    states = [_host("filter", h, 2).get_state() for h in range(2)]
    merge = spelt.experimental.VirtualShardIterDataset.merge_states
    with pytest.raises(ValueError, match="virtual shards 1, 3, 5, 7, 9, 11 of 12 are in no state"):
        merge(states[:1])
    with pytest.raises(ValueError, match="in the states of two hosts"):
        merge([states[0], states[0]])
    it = _host("filter", 0, 3)
    with pytest.raises(ValueError, match="lacks virtual shards 3, 9 of this host"):
        it.set_state(states[0])
    with pytest.raises(ValueError, match="12 virtual shards, this dataset 6"):
        iter(
            spelt.experimental.VirtualShardIterDataset(_filter, 6, spelt.sharding.NoSharding())
        ).set_state(merge(states))
    with pytest.raises(ValueError, match="VirtualShardIterDataset state is a dict"):
        it.set_state({"next_index": 3})


# Through the per-process checkpoint files (spelt.checkpoint's CheckpointHandler, as Orbax's
# CheckpointSave/CheckpointRestore call it, and the iterators' Orbax v1 save/load coroutines).


def _as_process(monkeypatch, index, count):
    monkeypatch.setattr(spelt.sharding, "get_process_index_and_count", lambda: (index, count))


async def _save_v1(it, directory):
    await (await it.save(directory))


async def _load_v1(it, directory):
    await (await it.load(directory))


@pytest.mark.parametrize("api", ["handler", "orbax_v1"])
@pytest.mark.parametrize("saved_on,restored_on", [(2, 1), (1, 2), (2, 3), (4, 2), (2, 2)])
@pytest.mark.parametrize("name", ["filter", "mix_batched", "concat_then_split"])
def test_checkpoint_files_restore_on_another_process_count(
    tmp_path, monkeypatch, name, saved_on, restored_on, api
):
    handler = spelt.checkpoint.CheckpointHandler()
    seen = collections.Counter()
    uninterrupted_on_same_count = []
    for h in range(saved_on):
        _as_process(monkeypatch, h, saved_on)
        it = _host(name, h, saved_on)
        seen.update(_elements(name, itertools.islice(it, 3 + h)))
        if api == "handler":
            handler.save(tmp_path, it)
        else:
            asyncio.run(_save_v1(it, tmp_path))
        uninterrupted_on_same_count.append(_elements(name, it))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"process_{h}-of-{saved_on}.json" for h in range(saved_on)
    ]
    for h in range(restored_on):
        _as_process(monkeypatch, h, restored_on)
        it = _host(name, h, restored_on)
        if api == "handler":
            handler.restore(tmp_path, it)
        else:
            asyncio.run(_load_v1(it, tmp_path))
        rest = _elements(name, it)
        if saved_on == restored_on:  # its own file: exactly the uninterrupted run's rest
            assert rest == uninterrupted_on_same_count[h]
        seen.update(rest)
    expected = _expected(name)
    assert (sum((expected - seen).values()), sum((seen - expected).values())) == (0, 0)


def test_checkpoint_files_of_different_virtual_shard_counts_are_refused(tmp_path, monkeypatch):
    handler = spelt.checkpoint.CheckpointHandler()
    for h in range(2):
        _as_process(monkeypatch, h, 2)
        handler.save(tmp_path, _host("filter", h, 2))
    _as_process(monkeypatch, 0, 1)
    other = iter(
        spelt.experimental.VirtualShardIterDataset(_filter, 6, spelt.sharding.NoSharding())
    )
    with pytest.raises(ValueError, match="12 virtual shards, this dataset 6"):
        handler.restore(tmp_path, other)
    (tmp_path / "process_1-of-2.json").write_text(json.dumps({"global_next_index": 4}))
    with pytest.raises(ValueError, match="written by 2 processes"):
        handler.restore(tmp_path, _host("filter", 0, 1))


def test_close_closes_a_shared_source_once():
    class Source:
        closed = 0

        def __len__(self):
            return 24

        def __getitem__(self, i):
            return i

        def close(self):
            Source.closed += 1

    source = Source()
    ds = spelt.experimental.VirtualShardIterDataset(
        lambda s: spelt.MapDataset.source(source)[s.shard_index :: s.shard_count],
        6,
        spelt.sharding.ShardOptions(0, 2),
    )
    it = iter(ds)
    assert list(it) == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22]
    it.close()
    it.close()
    assert Source.closed == 1


def _docs_snippet():
    text = (pathlib.Path(__file__).parents[1] / "docs" / "multihost.md").read_text()
    section = text.split("## Resuming any pipeline: virtual shards\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_docs_snippet_resumes_on_another_host_count(monkeypatch):
    """docs/multihost.md, Resuming any pipeline: its snippet (worker processes included) run on
    2 hosts (faked JAX process index and count), saved after 2 steps and restored on 3, reads
    every token of the records that its filter keeps exactly once."""

    def host(index, count):
        _as_process(monkeypatch, index, count)
        namespace: dict = {}
        exec(_docs_snippet(), namespace)  # pylint: disable=exec-used
        return namespace["it"]

    batches, states = [], []
    for h in range(2):
        it = host(h, 2)
        batches.extend(itertools.islice(it, 2))
        states.append(it.get_state())
        it.close()  # its worker processes
    for h in range(3):
        it = host(h, 3)
        it.set_state(spelt.experimental.VirtualShardIterDataset.merge_states(states))
        batches.extend(it)
        it.close()
    tokens = np.concatenate([b["tokens"][b["tokens_segment_ids"] > 0] for b in batches])
    kept = [r for r in range(72) if r % 5 != 0]
    np.testing.assert_array_equal(
        np.sort(tokens), np.sort(np.concatenate([np.arange(r % 3 + 1) + 100 * r + 1 for r in kept]))
    )


@pytest.mark.parametrize("saved_on,restored_on", [(2, 1), (2, 3)])
def test_checkpoint_files_restore_a_map_after_it_on_another_process_count(
    tmp_path, monkeypatch, saved_on, restored_on
):
    """A map and a thread prefetch after a VirtualShardIterDataset keep its state, so their
    files restore on another process count too (the files' rule, whatever the item)."""

    def host(index, count):
        ds = spelt.experimental.VirtualShardIterDataset(
            _filter, K, spelt.sharding.ShardOptions(index, count)
        )
        return iter(
            spelt.experimental.ThreadPrefetchIterDataset(
                ds.map(lambda x: x + 1), prefetch_buffer_size=2
            )
        )

    handler = spelt.checkpoint.CheckpointHandler()
    seen = collections.Counter()
    for h in range(saved_on):
        _as_process(monkeypatch, h, saved_on)
        it = host(h, saved_on)
        seen.update(itertools.islice(it, 4 + h))
        handler.save(tmp_path, it)
    for h in range(restored_on):
        _as_process(monkeypatch, h, restored_on)
        it = handler.restore(tmp_path, host(h, restored_on))
        seen.update(it)
    expected = collections.Counter(x * 10 + 1 for x in range(100) if x % 7 != 3)
    assert seen == expected


def test_threads_sharing_an_iterator_get_each_output_once():
    it = _host("mix", 0, 2)
    expected = collections.Counter(_key(x) for x in _host("mix", 0, 2))
    outputs: list = []

    def consume():
        outputs.extend(_key(x) for x in it)

    threads = [threading.Thread(target=consume) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert collections.Counter(outputs) == expected


def test_worker_processes_change_no_output_nor_state():
    """``mp_prefetch`` after a VirtualShardIterDataset computes each shard's records (a Python
    ``map``) in worker processes: the same packs and states as without workers, and a state
    saved on 2 hosts with workers restores on 3 hosts without (and the reverse)."""

    def host(index, count, workers):
        ds = spelt.experimental.VirtualShardIterDataset(
            _first_fit, 4, spelt.sharding.ShardOptions(index, count)
        )
        if workers:
            ds = ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=1))
            stages = [type(shard.parents[0]).__name__ for shard in ds.parents]
            assert stages == ["ProcessPrefetchIterDataset"] * len(ds.parents)
        return iter(ds)

    for workers_before, workers_after in ((True, False), (False, True)):
        seen, states = collections.Counter(), []
        for h in range(2):
            it, plain = host(h, 2, workers_before), host(h, 2, not workers_before)
            first = [_key(x) for x in itertools.islice(it, 3 + h)]
            assert first == [_key(x) for x in itertools.islice(plain, 3 + h)]
            assert it.get_state() == plain.get_state()
            seen.update(first)
            states.append(it.get_state())
            it.close()
        merged = spelt.experimental.VirtualShardIterDataset.merge_states(states)
        for h in range(3):
            it = host(h, 3, workers_after)
            it.set_state(merged)
            seen.update(_key(x) for x in it)
            it.close()
        expected = collections.Counter(
            _key(x) for v in range(4) for x in _first_fit(spelt.sharding.ShardOptions(v, 4))
        )
        assert seen == expected
