"""Sequence packing (spelt.experimental.FirstFitPackIterDataset, BestFitPackIterDataset,
ConcatThenSplitIterDataset, PackAndBatchOperation) against PyPI Grain 0.2.18 in the same run:
outputs and states after every element, restores from every position (also across libraries
and in a new process), the places where Grain is wrong, and errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import grain
import grain.experimental  # noqa: F401
import numpy as np
import pytest
from packing_pipelines import PIPELINES, digest, documents
from pipelines import TESTS_DIR, timeout  # noqa: F401

import spelt
import spelt.experimental


def assert_same(a, b):
    """Equal trees: same keys in the same order, arrays equal in dtype, shape and data."""
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype


def run_with_states(ds):
    it = iter(ds)
    out = []
    for element in it:
        out.append((element, it.get_state()))
    return out


def assert_matches_grain(build, **kwargs):
    expected = run_with_states(build(grain, **kwargs))
    actual = run_with_states(build(spelt, **kwargs))
    assert len(actual) == len(expected)
    for (a, state_a), (b, state_b) in zip(actual, expected):
        assert_same(a, b)
        assert state_a == state_b
    return actual


PACK_CASES = [
    {},
    {"shuffle_bins": False},
    {"num_packing_bins": 1},
    {"num_packing_bins": 64, "seed": 12345},
    {"max_sequences_per_bin": 2},
    {"pack_alignment_struct": {"inputs": 4, "targets": 8}},
    {"padding_struct": {"inputs": -1, "targets": 7}},
    {"shuffle_bins_group_by_feature": "inputs_segment_ids"},
    {"length_struct": {"inputs": 30, "targets": 64}, "meta_features": ["targets"]},
]


@pytest.mark.parametrize("kwargs", PACK_CASES)
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", ["first_fit", "best_fit"])
def test_pack_matches_grain(name, seed, kwargs):
    assert_matches_grain(PIPELINES[name], data_seed=seed, **kwargs)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"split_full_length_features": False},
        {"length_struct": {"inputs": 16, "targets": 16}},
        {
            "bos_handling": spelt.experimental.BOSHandling.REPLACE_FIRST_TOKEN_WITH_BOS,
            "bos_features": ["inputs"],
            "bos_token_id": 1,
        },
    ],
)
def test_concat_then_split_matches_grain(seed, kwargs):
    if "bos_handling" in kwargs:
        kwargs = dict(
            kwargs, bos_handling=grain.experimental.BOSHandling.REPLACE_FIRST_TOKEN_WITH_BOS
        )
        grain_kwargs = kwargs
        spelt_kwargs = dict(
            kwargs, bos_handling=spelt.experimental.BOSHandling.REPLACE_FIRST_TOKEN_WITH_BOS
        )
        expected = run_with_states(
            PIPELINES["concat_then_split"](grain, data_seed=seed, **grain_kwargs)
        )
        actual = run_with_states(
            PIPELINES["concat_then_split"](spelt, data_seed=seed, **spelt_kwargs)
        )
        assert len(actual) == len(expected)
        for (a, sa), (b, sb) in zip(actual, expected):
            assert_same(a, b)
            assert sa == sb
    else:
        assert_matches_grain(PIPELINES["concat_then_split"], data_seed=seed, **kwargs)


def test_concat_then_split_meta_features_match_grain():
    def build(g):
        docs = documents(80, 5, max_len=20, equal_lengths=True)
        ds = g.MapDataset.source(docs).map(lambda d: {**d, "doc": np.int64(len(d["inputs"]))})
        return g.experimental.ConcatThenSplitIterDataset(
            ds.to_iter_dataset(),
            length_struct={"inputs": 24, "targets": 24, "doc": 3},
            meta_features=["doc"],
        )

    assert_matches_grain(build)


def test_non_sequence_meta_features_match_grain():
    def build(g):
        docs = [dict(d, id=i) for i, d in enumerate(documents(60, 2))]
        return g.experimental.FirstFitPackIterDataset(
            g.MapDataset.source(docs).to_iter_dataset(),
            length_struct={"inputs": 40, "targets": 50},
            num_packing_bins=3,
            meta_features=["id"],
        )

    out = assert_matches_grain(build)
    assert isinstance(out[0][0]["id"], list)


@pytest.mark.parametrize("packer", ["FirstFitPackIterDataset", "BestFitPackIterDataset"])
def test_meta_feature_values_keep_their_types_as_grains(packer):
    """Numpy scalars stay numpy scalars (not 0-d arrays), 0-d arrays stay arrays, Python
    scalars stay Python scalars, as Grain collects them."""
    metas = [np.int64(7), np.float32(0.5), np.bool_(True), np.array(3, np.int32), 4, 2.5]
    metas += [np.bytes_(b"ab"), np.str_("c"), np.complex64(1 + 2j), np.uint16(9)]

    def build(g):
        docs = [{"inputs": np.arange(i % 3 + 1), "m": m} for i, m in enumerate(metas)]
        return getattr(g.experimental, packer)(
            g.MapDataset.source(docs).to_iter_dataset(),
            length_struct={"inputs": 4},
            num_packing_bins=2,
            meta_features=["m"],
        )

    def described(ds):
        return [
            [(type(m), np.shape(m), m.tolist() if hasattr(m, "tolist") else m) for m in packed["m"]]
            for packed in ds
        ]

    out = described(build(spelt))
    assert out == described(build(grain))
    types = sorted(t.__name__ for bin_ in out for t, _, _ in bin_)
    assert types == sorted(type(m).__name__ for m in metas)


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_restore_from_every_position_and_across_libraries(name):
    build = PIPELINES[name]
    spelt.experimental.assert_equal_output_after_checkpoint(build(spelt))
    expected = list(build(spelt))
    grain_it, spelt_it = iter(build(grain)), iter(build(spelt))
    for k in range(len(expected) + 1):
        # A Grain state restores in Spelt and a Spelt state in Grain, at every position.
        for src_it, dst_lib in ((grain_it, spelt), (spelt_it, grain)):
            restored = iter(build(dst_lib))
            restored.set_state(
                json.loads(json.dumps(src_it.get_state()))
                if dst_lib is spelt
                else src_it.get_state()
            )
            rest = list(restored)
            assert len(rest) == len(expected) - k
            for a, b in zip(rest, expected[k:]):
                assert_same(a, b)
        if k < len(expected):
            next(grain_it)
            next(spelt_it)


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_restore_in_new_process(name):
    build = PIPELINES[name]
    expected = list(build(spelt))
    it = iter(build(spelt))
    for _ in range(len(expected) // 2):
        next(it)
    state = json.dumps(it.get_state())
    out = subprocess.run(
        [sys.executable, os.path.join(TESTS_DIR, "packing_pipelines.py"), name, state],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == digest(expected[len(expected) // 2 :])


def test_output_and_state_do_not_depend_on_worker_count():
    def build(workers):
        docs = documents(200, 9)
        ds = spelt.MapDataset.source(docs).map(lambda d: d).to_iter_dataset()
        if workers:
            ds = ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=workers))
        return spelt.experimental.FirstFitPackIterDataset(
            ds, length_struct={"inputs": 40, "targets": 50}, num_packing_bins=4
        )

    expected = run_with_states(build(0))
    actual = run_with_states(build(2))
    assert len(actual) == len(expected)
    for (a, sa), (b, sb) in zip(actual, expected):
        assert_same(a, b)
        assert sa == sb
    restored = iter(build(3))
    restored.set_state(expected[10][1])
    for a, (b, _) in zip(restored, expected[11:]):
        assert_same(a, b)


def test_bins_of_a_batch_are_views_of_one_buffer():
    ds = PIPELINES["first_fit"](spelt, shuffle_bins=False)
    it = iter(ds)
    a, b = next(it), next(it)
    assert not a["inputs"].flags.owndata
    assert a["inputs"].shape == (40,) and a["inputs"].dtype == np.int32
    assert a["targets_segment_ids"].dtype == np.int32
    base = a["inputs"].base
    assert base is not None and b["inputs"].base is not None


# --- Where Grain 0.2.18 is wrong (docs/compatibility.md) ---------------------------------------


def cts(docs, **kwargs):
    ds = spelt.MapDataset.source(docs).to_iter_dataset()
    return list(spelt.experimental.ConcatThenSplitIterDataset(ds, **kwargs))


def test_split_twice_keeps_other_feature_once():
    # Grain re-emits the first document's inputs in the third output.
    docs = [
        {"inputs": np.array([1, 2, 3]), "targets": np.arange(10, 22)},
        {"inputs": np.array([4, 5]), "targets": np.array([30, 31])},
    ]
    out = cts(docs, length_struct={"inputs": 4, "targets": 4})
    inputs = np.concatenate([o["inputs"][o["inputs_segment_ids"] > 0] for o in out])
    targets = np.concatenate([o["targets"][o["targets_segment_ids"] > 0] for o in out])
    np.testing.assert_array_equal(inputs, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(targets, list(range(10, 22)) + [30, 31])
    assert (
        spelt.experimental.assert_equal_output_after_checkpoint(
            spelt.experimental.ConcatThenSplitIterDataset(
                spelt.MapDataset.source(docs).to_iter_dataset(),
                length_struct={"inputs": 4, "targets": 4},
            )
        )
        is None
    )


@pytest.mark.parametrize(
    ("lengths", "expected"),
    [
        ([4, 0, 2], [[9, 1, 1, 1], [9, 3, 0, 0]]),  # Grain: IndexError
        ([3, 5], [[9, 1, 1, 9], [9, 2, 2, 2]]),
    ],
)
def test_bos_replacement_skips_empty_sequences(lengths, expected):
    docs = [{"tokens": np.full(n, i + 1)} for i, n in enumerate(lengths)]
    out = cts(
        docs,
        length_struct={"tokens": 4},
        bos_handling=spelt.experimental.BOSHandling.REPLACE_FIRST_TOKEN_WITH_BOS,
        bos_features=["tokens"],
        bos_token_id=9,
    )
    got = [o["tokens"].tolist() for o in out]
    assert got == expected


def test_bos_replacement_when_bos_feature_is_full():
    # Grain: IndexError (feature "a" is full, "b" is not, so an empty part of "a" follows).
    docs = [
        {"a": np.array([5, 5, 5, 5]), "b": np.array([6, 6])},
        {"a": np.array([7, 7]), "b": np.array([8, 8])},
    ]
    out = cts(
        docs,
        length_struct={"a": 4, "b": 4},
        bos_handling=spelt.experimental.BOSHandling.REPLACE_FIRST_TOKEN_WITH_BOS,
        bos_features=["a", "b"],
        bos_token_id=0,
    )
    assert [o["a"].tolist() for o in out] == [[0, 5, 5, 5], [0, 7, 0, 0]]
    assert [o["b"].tolist() for o in out] == [[0, 6, 0, 8], [0, 0, 0, 0]]
    assert [o["a_segment_ids"].tolist() for o in out] == [[1, 1, 1, 1], [1, 1, 0, 0]]


# --- PackAndBatchOperation -----------------------------------------------------------------------


def test_pack_and_batch_call_matches_grain():
    docs = documents(50, 4)

    def records(lib):
        return [lib.Record(lib.RecordMetadata(index=i), d) for i, d in enumerate(docs)]

    kw = {"length_struct": {"inputs": 40, "targets": 50}, "batch_size": 3}
    g = list(grain.experimental.PackAndBatchOperation(**kw)(iter(records(grain))))
    s = list(spelt.experimental.PackAndBatchOperation(**kw)(iter(records(spelt))))
    assert len(s) == len(g)
    for a, b in zip(s, g):
        assert a.metadata.index == b.metadata.index
        assert_same(a.data, b.data)


def test_pack_and_batch_in_data_loader_matches_grain_and_restores():
    docs = documents(100, 6)

    def loader(lib):
        return lib.DataLoader(
            data_source=docs,
            sampler=lib.samplers.SequentialSampler(len(docs), lib.sharding.NoSharding()),
            operations=[
                lib.experimental.PackAndBatchOperation(
                    length_struct={"inputs": 40, "targets": 50}, batch_size=4
                )
            ],
        )

    expected = list(loader(grain))
    it = iter(loader(spelt))
    states = [it.get_state()]
    out = []
    for batch in it:
        out.append(batch)
        states.append(it.get_state())
    assert len(out) == len(expected)
    for a, b in zip(out, expected):
        assert_same(a, b)
    for k, state in enumerate(states):  # Grain drops an element per batch here
        restored = iter(loader(spelt))
        restored.set_state(state)
        rest = list(restored)
        assert len(rest) == len(out) - k
        for a, b in zip(rest, out[k:]):
            assert_same(a, b)


# --- Errors -----------------------------------------------------------------------------------------


def first_fit_of(docs, **kwargs):
    kw = {"length_struct": {"inputs": 4, "targets": 4}, "num_packing_bins": 2}
    kw.update(kwargs)
    return spelt.experimental.FirstFitPackIterDataset(
        spelt.MapDataset.source(docs).to_iter_dataset(), **kw
    )


def test_error_sequence_too_long_names_feature_and_element():
    docs = [{"inputs": np.arange(3), "targets": np.arange(2)}] * 2
    docs.append({"inputs": np.arange(3), "targets": np.arange(5)})
    with pytest.raises(ValueError, match=r"feature 'targets' of element 2 has length 5.*4"):
        list(first_fit_of(docs))


def test_error_missing_feature_names_feature_and_element():
    docs = [{"inputs": np.arange(3), "targets": np.arange(2)}, {"inputs": np.arange(3)}]
    with pytest.raises(ValueError, match=r"feature 'targets' of element 1 is missing"):
        list(first_fit_of(docs))


def test_error_mismatched_token_shapes_names_feature_and_element():
    docs = [
        {"inputs": np.zeros((2, 3)), "targets": np.arange(2)},
        {"inputs": np.zeros((2, 4)), "targets": np.arange(2)},
    ]
    with pytest.raises(ValueError, match=r"feature 'inputs' of element 1: tokens of shape \(4,\)"):
        list(first_fit_of(docs))


def test_error_concat_then_split_keys_and_meta_length():
    docs = [{"inputs": np.arange(3), "targets": np.arange(3)}, {"inputs": np.arange(3)}]
    with pytest.raises(ValueError, match=r"Parent element has structure.*element 1"):
        cts(docs, length_struct={"inputs": 4, "targets": 4})
    docs = [{"inputs": np.arange(3), "doc": np.arange(5)}]
    with pytest.raises(ValueError, match=r"meta feature 'doc' of element 0 has length 5"):
        cts(docs, length_struct={"inputs": 4, "doc": 4}, meta_features=["doc"])


def test_error_invalid_options():
    with pytest.raises(ValueError, match="max_sequences_per_bin"):
        first_fit_of([], max_sequences_per_bin=0)
    with pytest.raises(ValueError, match="num_packing_bins"):
        first_fit_of([], num_packing_bins=0)
    with pytest.raises(ValueError, match="bos_token_id must be set"):
        cts(
            [],
            length_struct={"a": 2},
            bos_handling=spelt.experimental.BOSHandling.REPLACE_FIRST_TOKEN_WITH_BOS,
        )
