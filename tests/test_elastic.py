"""ElasticIterator (grain.experimental) against Grain 0.2.18: outputs and states after every step,
restore from every position (also in a new process), and resizing: a job checkpointed on one
host count resumes on another with every element of the epoch read exactly once."""

from __future__ import annotations

import collections
import itertools
import json
import os
import subprocess
import sys

import grain
import numpy as np
import pytest

import pipelines
import spelt
from pipelines import assert_same, timeout  # noqa: F401

N = 96  # divisible by every global batch size below, so a whole epoch drops nothing


def _source(g, n=N):
    return g.MapDataset.range(n).seed(7).shuffle().map(lambda x: x * 2 + 1)


def _elastic(g, batch, shard=None, workers=None, n=N):
    so = g.sharding.NoSharding() if shard is None else g.sharding.ShardOptions(*shard)
    mp = None if workers is None else g.MultiprocessingOptions(num_workers=workers)
    return g.experimental.ElasticIterator(_source(g, n), batch, so, multiprocessing_options=mp)


CONFIGS = {
    "no_sharding": dict(batch=5, n=23),
    "shard_0_of_2": dict(batch=4, shard=(0, 2), n=23),
    "shard_2_of_4": dict(batch=8, shard=(2, 4), n=30),
    "shard_1_of_2_two_workers": dict(batch=4, shard=(1, 2), workers=2, n=23),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_outputs_and_states_match_grain(name):
    config = CONFIGS[name]
    g_out, g_states = pipelines.run_with_states(iter(_elastic(grain, **config)), None)
    s_out, s_states = pipelines.run_with_states(iter(_elastic(spelt, **config)), None)
    assert g_out
    assert_same(s_out, g_out)
    assert s_states == g_states
    positions = range(len(s_states))
    if config.get("workers"):  # each restore starts worker processes: a few positions
        positions = [0, len(s_states) // 2, len(s_states) - 1]
    for k in positions:  # restore at every step
        state = s_states[k]
        it = _elastic(spelt, **config)
        it.set_state(state)
        assert it.get_state() == state
        assert_same(list(it), g_out[k:])


def test_one_iterator_as_in_grain():
    ds = _elastic(spelt, 4, (0, 2))
    assert iter(ds) is iter(ds)
    first = next(ds)  # the dataset itself is the iterator's face, as in Grain
    assert ds.get_state() == {"global_next_index": 4}
    ds.set_state({"global_next_index": 0})
    assert_same(next(iter(ds)), first)
    ds.close()
    # Grain's helper restores on iter(ds), the same iterator: every step is checked.
    spelt.experimental.assert_equal_output_after_checkpoint(_elastic(spelt, 5, n=23))
    assert str(ds) == (
        "ElasticIterator(global_batch_size=4, shard_options=ShardOptions(shard_index=0,"
        " shard_count=2, drop_remainder=False))"
    )


def _consume(iterators, steps):
    """Elements read by advancing every host `steps` times (None: to its end)."""
    seen = []
    for it in iterators:
        for batch in itertools.islice(it, steps):
            seen.extend(np.asarray(batch).ravel().tolist())
    return seen


RESIZES = {  # name: (hosts before, global batch before, hosts after, global batch after, steps)
    "2_to_1": (2, 4, 1, 4, [0, 3, 9]),
    "4_to_2": (4, 8, 2, 4, [0, 1, 5, 11]),
    "4_to_8": (4, 8, 8, 16, [0, 2, 6, 12]),
    "2_to_3": (2, 4, 3, 6, [0, 3, 9, 24]),
    "4_to_2_two_workers": (4, 8, 2, 4, [3]),
}


@pytest.mark.parametrize("name", list(RESIZES))
def test_resize_reads_every_element_once(name):
    before, batch_before, after, batch_after, positions = RESIZES[name]
    workers = 2 if name.endswith("two_workers") else None
    whole_epoch = collections.Counter(_source(spelt))
    assert len(whole_epoch) == N
    for steps in positions:
        hosts = [_elastic(spelt, batch_before, (i, before), workers) for i in range(before)]
        seen = _consume(hosts, steps)
        state = hosts[steps % before].get_state()  # any host's state: all are equal
        assert all(h.get_state() == state for h in hosts)
        assert state == {"global_next_index": steps * batch_before}
        new_hosts = [_elastic(spelt, batch_after, (i, after), workers) for i in range(after)]
        for h in new_hosts:
            h.set_state(json.loads(json.dumps(state)))
        seen += _consume(new_hosts, None)
        assert collections.Counter(seen) == whole_epoch, f"checkpoint after {steps} steps"


def test_resize_matches_grain_when_shards_are_uneven():
    """N = 23 elements: the last steps give some hosts one batch more; Spelt reads what Grain
    reads, host by host, before and after a 3 -> 2 resize."""
    reads = {}
    for g in (grain, spelt):
        hosts = [_elastic(g, 3, (i, 3), n=23) for i in range(3)]
        first = [_consume([h], 2) for h in hosts]
        state = hosts[0].get_state()
        new_hosts = [_elastic(g, 2, (i, 2), n=23) for i in range(2)]
        for h in new_hosts:
            h.set_state(state)
        reads[g.__name__] = (first, [_consume([h], None) for h in new_hosts])
    assert reads["spelt"] == reads["grain"]


def test_bad_arguments():
    ds = spelt.MapDataset.range(10)
    with pytest.raises(ValueError, match="does not support `filter`"):
        spelt.experimental.ElasticIterator(
            ds.filter(lambda x: x > 2), 2, spelt.sharding.NoSharding()
        )
    with pytest.raises(ValueError, match="not divisible by shard count 4"):
        spelt.experimental.ElasticIterator(ds, 6, spelt.sharding.ShardOptions(0, 4))
    with pytest.raises(ValueError, match="positive"):
        spelt.experimental.ElasticIterator(ds, 0, spelt.sharding.NoSharding())
    # An IterDataset needs an interleave of shards (tests/test_elastic_interleave.py); a
    # to_iter_dataset (prefetch) is refused as upstream does.
    with pytest.raises(ValueError, match="zip, mix or prefetch"):
        spelt.experimental.ElasticIterator(ds.to_iter_dataset(), 2, spelt.sharding.NoSharding())
    with pytest.raises(TypeError, match="needs a dataset"):
        spelt.experimental.ElasticIterator(list(range(10)), 2, spelt.sharding.NoSharding())
    it = spelt.experimental.ElasticIterator(ds, 2, spelt.sharding.NoSharding())
    for bad in ({"next_index": 3}, {"global_next_index": -2}, [4]):
        with pytest.raises(ValueError, match="global_next_index"):
            it.set_state(bad)


def child_main(out_path: str) -> None:
    """In a fresh interpreter: restores the shard_0_of_2 states of every step."""
    results = []
    for state in json.loads(os.environ["ELASTIC_STATES"]):
        it = _elastic(spelt, **CONFIGS["shard_0_of_2"])
        it.set_state(state)
        results.append([np.asarray(b).tolist() for b in it])
    with open(out_path, "w") as f:
        json.dump(results, f)


def test_restore_in_new_process(tmp_path):
    out, states = pipelines.run_with_states(iter(_elastic(spelt, **CONFIGS["shard_0_of_2"])), None)
    out_path = str(tmp_path / "restored.json")
    code = (
        f"import sys; sys.path.insert(0, {pipelines.TESTS_DIR!r}); import test_elastic;"
        f" test_elastic.child_main({out_path!r})"
    )
    env = dict(os.environ, ELASTIC_STATES=json.dumps(states))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    with open(out_path) as f:
        restored = json.load(f)
    assert restored == [[b.tolist() for b in out[k:]] for k in range(len(states))]
