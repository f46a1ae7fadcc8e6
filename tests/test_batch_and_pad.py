"""grain.experimental.batch_and_pad against Grain 0.2.18: padded batches (values, dtypes,
trees), as a batch_fn with iterator states and restore (in a new process: the batch_and_pad
pipeline of pipelines.py, run by test_checkpoint.py), and its errors."""

from __future__ import annotations

import functools

import grain
import numpy as np
import pytest

import pipelines
import spelt
from pipelines import assert_same, timeout  # noqa: F401


@pytest.mark.parametrize(
    "values, kwargs",
    [
        ([1, 2], dict(batch_size=4)),
        ([1, 2], dict(batch_size=2)),
        ([np.int32(1)], dict(batch_size=3, pad_value=0.7)),
        ([1.5, 2.5], dict(batch_size=3, pad_value=-1)),
        ([True], dict(batch_size=2, pad_value=1)),
        (
            [{"a": np.ones((2, 3), np.float32), "b": (np.uint8(3), 4)}] * 2,
            dict(batch_size=5, pad_value=9),
        ),
        ([np.int8(1), np.float32(2)], dict(batch_size=3, pad_value=7)),
    ],
)
def test_matches_grain(values, kwargs):
    assert_same(
        spelt.experimental.batch_and_pad(values, **kwargs),
        grain.experimental.batch_and_pad(values, **kwargs),
    )


def test_as_batch_fn_matches_grain():
    build = pipelines.DATASET_PIPELINES["batch_and_pad"]["build"]
    g_out, g_states = pipelines.run_with_states(iter(build(grain)), None)
    s_out, s_states = pipelines.run_with_states(iter(build(spelt)), None)
    assert_same(s_out, g_out)
    assert s_states == g_states
    spelt.experimental.assert_equal_output_after_checkpoint(build(spelt))
    g_ds, s_ds = pipelines.both(
        lambda g: g.MapDataset.range(7).batch(
            3, batch_fn=functools.partial(g.experimental.batch_and_pad, batch_size=3, pad_value=-1)
        )
    )
    assert_same(list(s_ds), list(g_ds))


def test_errors():
    with pytest.raises(ValueError, match="Cannot batch 0 values."):
        spelt.experimental.batch_and_pad([], batch_size=2)
    with pytest.raises(ValueError, match="Cannot batch 3 values to 2."):
        spelt.experimental.batch_and_pad([1, 2, 3], batch_size=2)
    with pytest.raises(ValueError, match="padding needs numeric leaves"):
        spelt.experimental.batch_and_pad(["a"], batch_size=2)
