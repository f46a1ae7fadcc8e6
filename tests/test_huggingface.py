"""Hugging Face ``datasets`` (issue 10): a streaming IterableDataset as an IterDataset source
checkpointed by its own state_dict (restored in a new process), and a map-style Dataset as a
data source. Datasets are built locally by the tests (no network)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import cloudpickle  # noqa: E402
import datasets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from pipelines import timeout  # noqa: E402,F401  (autouse fixture)
import spelt  # noqa: E402

HuggingFaceIterDataset = spelt.experimental.HuggingFaceIterDataset


@pytest.fixture(scope="module")
def streaming(tmp_path_factory):
    """A streaming dataset read from two local JSON Lines files, with a map on top."""
    d = tmp_path_factory.mktemp("hf")
    paths = []
    for f in range(2):
        path = d / f"part{f}.jsonl"
        with open(path, "w") as out:
            for i in range(7 + f):
                out.write(json.dumps({"id": 100 * f + i, "tokens": list(range(i % 4))}) + "\n")
        paths.append(str(path))
    hf = datasets.load_dataset(
        "json", data_files=paths, split="train", streaming=True, cache_dir=str(d / "cache")
    )
    return hf.map(lambda r: {"double": r["id"] * 2})


@pytest.fixture(scope="module")
def in_memory():
    table = {"id": list(range(20)), "text": [f"t{i}" for i in range(20)]}
    return datasets.Dataset.from_dict(table)


def _hf_run(hf):
    """(examples, state_dict after each) read from the IterableDataset itself."""
    outputs, states = [], [hf.state_dict()]
    for x in hf:
        outputs.append(x)
        states.append(json.loads(json.dumps(hf.state_dict())))
    return outputs, states


def _run(ds):
    it = iter(ds)
    outputs, states = [], [it.get_state()]
    for x in it:
        outputs.append(x)
        states.append(it.get_state())
    return outputs, states


@pytest.mark.parametrize("kind", ["streaming", "in_memory"])
def test_elements_and_states_are_the_librarys(streaming, in_memory, kind):
    hf = streaming if kind == "streaming" else in_memory.to_iterable_dataset(num_shards=3)
    want, want_states = _hf_run(hf)
    got, states = _run(HuggingFaceIterDataset(hf))
    assert got == want and len(got) in (15, 20)
    assert states[1:] == want_states[1:]
    assert json.loads(json.dumps(states)) == states
    # Two iterators of one dataset keep their own positions.
    ds = HuggingFaceIterDataset(hf)
    a, b = iter(ds), iter(ds)
    first = [next(a) for _ in range(3)]
    assert next(b) == first[0] and a.get_state() == states[3] and b.get_state() == states[1]


def test_restore_from_every_position(streaming):
    ds = HuggingFaceIterDataset(streaming)
    outputs, states = _run(ds)
    for k, state in enumerate(states):
        it = iter(ds)
        it.set_state(state)
        assert it.get_state() == state
        assert list(it) == outputs[k:], f"restored at {k}"
    spelt.experimental.assert_equal_output_after_checkpoint(ds)
    pipeline = ds.map(lambda r: r["double"] + 1).batch(4)
    spelt.experimental.assert_equal_output_after_checkpoint(pipeline)
    assert [b.tolist() for b in pipeline][0] == [r["double"] + 1 for r in outputs[:4]]


def test_restore_in_new_process(streaming, tmp_path):
    ds = HuggingFaceIterDataset(streaming).map(lambda r: (r["id"], r["double"]))
    outputs, states = _run(ds)
    with open(tmp_path / "job.pkl", "wb") as f:
        pickle.dump((cloudpickle.dumps(ds), json.dumps(states)), f)
    child = (
        "import json, pickle, sys, cloudpickle\n"
        "ds_bytes, states = pickle.load(open(sys.argv[1], 'rb'))\n"
        "ds = cloudpickle.loads(ds_bytes)\n"
        "out = []\n"
        "for state in json.loads(states):\n"
        "    it = iter(ds); it.set_state(state); out.append((it.get_state(), list(it)))\n"
        "pickle.dump(out, open(sys.argv[2], 'wb'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", child, tmp_path / "job.pkl", tmp_path / "out.pkl"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "out.pkl", "rb") as f:
        restored = pickle.load(f)
    assert len(restored) == len(outputs) + 1
    for k, (state, rest) in enumerate(restored):
        assert state == states[k]
        assert rest == outputs[k:], f"restored at {k}"


def test_bad_inputs(in_memory, streaming):
    with pytest.raises(TypeError, match="MapDataset.source"):
        HuggingFaceIterDataset(in_memory)
    it = iter(HuggingFaceIterDataset(streaming))
    with pytest.raises(ValueError, match="examples_iterable"):
        it.set_state({"next_index": 3})


def test_map_style_dataset_is_a_data_source(in_memory):
    ds = spelt.MapDataset.source(in_memory).seed(3).shuffle()
    ids = [r["id"] for r in ds]
    assert sorted(ids) == list(range(20)) and ids != list(range(20))
    batch = next(iter(ds.to_iter_dataset().batch(5)))
    assert batch["id"].tolist() == ids[:5] and batch["text"].dtype.kind == "U"

    def loader(workers):
        return spelt.DataLoader(
            data_source=in_memory,
            sampler=spelt.samplers.IndexSampler(
                len(in_memory),
                shard_options=spelt.sharding.ShardOptions(1, 2),
                shuffle=True,
                seed=4,
                num_epochs=2,
            ),
            operations=[spelt.transforms.Batch(3)],
            worker_count=workers,
        )

    inline = list(loader(0))
    np.testing.assert_equal(list(loader(2)), inline)
    seen = [int(i) for b in inline for i in b["id"]]
    assert len(seen) == 20 and sorted(set(seen)) == list(range(10, 20))
