"""The LM demo (examples/lm_demo.py, ``make demo-lm``) on a tiny corpus: the packed batches hold
every stored token once, the demo's kill / resume check passes, and it reports Grain's batches
identical."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import spelt

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES_DIR)

import lm_data

SMALL = {"max_bytes": 60_000, "vocab_size": 384, "seq_len": 128, "batch_size": 2}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lm") / "data"
    made = lm_data.prepare(SMALL["max_bytes"], SMALL["vocab_size"], SMALL["seq_len"], directory)
    return directory, made


def test_stored_documents_are_the_tokenized_files(corpus):
    directory, made = corpus
    source = spelt.sources.ArrayRecordDataSource(lm_data.shard_paths(directory))
    docs = [np.frombuffer(source[i], np.int32) for i in range(len(source))]
    assert len(docs) == made["documents"] > made["files"] > 0
    assert sum(len(d) for d in docs) == made["tokens"]
    assert max(len(d) for d in docs) == SMALL["seq_len"] + 1
    assert all(0 <= d.min() and d.max() < made["vocab_size"] for d in docs)


def test_packed_batches_hold_every_target_once(corpus):
    directory, _ = corpus
    seq_len, batch_size = SMALL["seq_len"], SMALL["batch_size"]
    ds = lm_data.make_dataset(spelt, lm_data.shard_paths(directory), seq_len, 1)
    pairs = []  # (input, target) pairs of the packed bins, in sequence order
    for bin_ in ds:
        segments, inputs, targets = (
            bin_[k][0] for k in ("inputs_segment_ids", "inputs", "targets")
        )
        assert bin_["inputs"].shape == (1, seq_len) and bin_["inputs"].dtype == np.int32
        np.testing.assert_array_equal(segments, bin_["targets_segment_ids"][0])
        for segment in range(1, segments.max() + 1):
            where = segments == segment
            np.testing.assert_array_equal(
                bin_["inputs_positions"][0][where], np.arange(where.sum())
            )
            pairs.extend(zip(inputs[where], targets[where]))
    source = spelt.sources.ArrayRecordDataSource(lm_data.shard_paths(directory))
    stored = []
    for i in range(len(source)):
        doc = np.frombuffer(source[i], np.int32)
        stored.extend(itertools.pairwise(doc))
    assert sorted(pairs) == sorted(stored)  # nothing lost or duplicated
    batched = list(lm_data.make_dataset(spelt, lm_data.shard_paths(directory), seq_len, batch_size))
    assert all(b["inputs"].shape == (batch_size, seq_len) for b in batched)


def test_demo_killed_and_resumed_gives_identical_batches(tmp_path):
    args = [f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items()]
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(EXAMPLES_DIR, "lm_demo.py"),
            f"--data-dir={tmp_path / 'data'}",
        ]
        + args
        + ["--steps=8", "--kill-at=3"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "killed with SIGKILL" in result.stdout
    assert "resume check:       PASSED" in result.stdout
    assert "Grain's batches identical" in result.stdout
