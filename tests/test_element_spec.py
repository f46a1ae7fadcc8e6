"""get_element_spec: inferred without reading data, compared with PyPI Grain 0.2.18 (specs,
and the errors where there is no rule or a transform has no ``output_spec``)."""

from __future__ import annotations

import functools

import grain
import numpy as np
import pytest

import spelt
from pipelines import both, timeout  # noqa: F401


def plain(spec):
    """A spec tree as nested dict/tuple of (shape, numpy dtype), comparable across libraries."""
    if isinstance(spec, dict):
        return {k: plain(v) for k, v in spec.items()}
    if isinstance(spec, (tuple, list)):
        return tuple(plain(v) for v in spec)
    return (tuple(spec.shape), np.dtype(spec.dtype))


def with_spec(g, kind):
    """A transform of ``kind`` (Map, RandomMap, MapWithIndex) whose output_spec wraps the
    input spec in a dict, and checks that it got the int64 scalar spec."""
    base = getattr(g.transforms, kind)
    method = {"Map": "map", "RandomMap": "random_map", "MapWithIndex": "map_with_index"}[kind]

    def output_spec(self, input_spec):
        assert plain(input_spec) == ((), np.dtype(np.int64)), input_spec
        Spec = g.experimental.ShapeDtypeStruct
        return {"x": Spec(shape=(4,), dtype=np.float32), "i": input_spec}

    return type(
        f"{kind}WithSpec", (base,), {method: lambda self, *a: a, "output_spec": output_spec}
    )()


class _PairBatch:
    def __call__(self, elements):
        return {"batch": np.stack(elements)}

    def output_spec(self, input_spec, batch_size, drop_remainder):
        return {
            "batch": type(input_spec)(shape=(batch_size, *input_spec.shape), dtype=input_spec.dtype)
        }


def _rebatch(g, ds, n):
    return g.experimental.RebatchIterDataset(ds, n)


PIPELINES = {
    "range": lambda g: g.MapDataset.range(10),
    "range_iter": lambda g: g.MapDataset.range(10).to_iter_dataset(),
    "seed_shuffle_slice_repeat": lambda g: g.MapDataset.range(10).seed(3).shuffle()[1:7].repeat(2),
    "filter_map": lambda g: g.MapDataset.range(10).filter(lambda x: x % 2 == 0),
    "filter_iter": lambda g: g.MapDataset.range(10).to_iter_dataset().filter(lambda x: x > 2),
    "batch_keep": lambda g: g.MapDataset.range(10).batch(3),
    "batch_drop": lambda g: g.MapDataset.range(10).batch(3, drop_remainder=True),
    "batch_iter_drop": lambda g: (
        g.MapDataset.range(10).to_iter_dataset().batch(4, drop_remainder=True)
    ),
    "batch_fn_spec": lambda g: g.MapDataset.range(10).batch(2, batch_fn=_PairBatch()),
    "map_spec": lambda g: g.MapDataset.range(10).map(with_spec(g, "Map")),
    "map_spec_batched": lambda g: (
        g.MapDataset.range(10).map(with_spec(g, "Map")).batch(2, drop_remainder=True)
    ),
    "random_map_spec": lambda g: g.MapDataset.range(10).random_map(
        with_spec(g, "RandomMap"), seed=1
    ),
    "map_with_index_spec_iter": lambda g: (
        g.MapDataset.range(10).to_iter_dataset().map_with_index(with_spec(g, "MapWithIndex"))
    ),
    "mix": lambda g: g.MapDataset.mix([g.MapDataset.range(4), g.MapDataset.range(5)]),
    "concatenate": lambda g: g.MapDataset.concatenate(
        [g.MapDataset.range(4), g.MapDataset.range(5)]
    ),
    "mix_iter": lambda g: g.IterDataset.mix([g.MapDataset.range(4).to_iter_dataset()] * 2),
    "zip": lambda g: g.experimental.ZipMapDataset(
        [g.MapDataset.range(4), g.MapDataset.range(8).batch(2)]
    ),
    "zip_iter": lambda g: g.experimental.ZipIterDataset(
        [g.MapDataset.range(4).to_iter_dataset()] * 2
    ),
    "limit_repeat": lambda g: g.experimental.RepeatIterDataset(
        g.experimental.LimitIterDataset(g.MapDataset.range(9).to_iter_dataset(), 3), 2
    ),
    "rebatch": lambda g: _rebatch(g, g.MapDataset.range(10).to_iter_dataset().batch(4), 3),
    "window_shuffle": lambda g: g.experimental.WindowShuffleMapDataset(
        g.MapDataset.range(10), window_size=3, seed=1
    ),
    "window_shuffle_iter": lambda g: g.experimental.WindowShuffleIterDataset(
        g.MapDataset.range(10).to_iter_dataset(), window_size=3, seed=1
    ),
    "interleave": lambda g: g.experimental.InterleaveIterDataset(
        [g.MapDataset.range(3)] * 2, cycle_length=2
    ),
    "thread_prefetch": lambda g: g.experimental.ThreadPrefetchIterDataset(
        g.MapDataset.range(10).to_iter_dataset(), prefetch_buffer_size=2
    ),
    "with_options": lambda g: g.experimental.WithOptionsIterDataset(
        g.MapDataset.range(10).to_iter_dataset(),
        g.experimental.DatasetOptions(filter_warn_threshold_ratio=0.5),
    ),
    "mp_prefetch": lambda g: (
        g.MapDataset.range(10)
        .to_iter_dataset()
        .mp_prefetch(g.MultiprocessingOptions(num_workers=2))
    ),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_spec_as_grain(name):
    g_spec, s_spec = both(lambda g: g.experimental.get_element_spec(PIPELINES[name](g)))
    assert plain(s_spec) == plain(g_spec)


def test_specs_read_no_data():
    calls = []

    class Spy(spelt.transforms.Map):
        def map(self, x):
            calls.append(x)
            return x

        def output_spec(self, input_spec):
            return input_spec

    ds = spelt.MapDataset.range(5).map(Spy()).to_iter_dataset().batch(2)
    assert plain(spelt.experimental.get_element_spec(ds)) == ((None,), np.dtype(np.int64))
    assert calls == []


ERRORS = {
    "map_without_output_spec": (lambda g: g.MapDataset.range(3).map(lambda x: x), ValueError),
    "iter_random_map_without_output_spec": (
        lambda g: g.MapDataset.range(3).to_iter_dataset().random_map(lambda x, r: x, seed=1),
        ValueError,
    ),
    "source": (lambda g: g.MapDataset.source([1, 2]), NotImplementedError),
    # The transform is checked before the parent, as Grain does.
    "map_without_output_spec_over_source": (
        lambda g: g.MapDataset.source([1, 2]).map(lambda x: x),
        ValueError,
    ),
    "batch_fn_without_output_spec": (
        lambda g: g.MapDataset.range(4).batch(2, batch_fn=functools.partial(np.stack, axis=0)),
        NotImplementedError,
    ),
    "flat_map": (
        lambda g: g.experimental.FlatMapIterDataset(
            g.MapDataset.range(3).to_iter_dataset(), _Twice(g)
        ),
        NotImplementedError,
    ),
    "output_spec_error_propagates": (
        lambda g: g.MapDataset.range(4).batch(2).map(with_spec(g, "Map")),
        AssertionError,
    ),
}


def _Twice(g):
    return type(
        "Twice",
        (g.experimental.FlatMapTransform,),
        {"max_fan_out": 2, "flat_map": lambda self, x: [x, x]},
    )()


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_as_grain(name):
    build, error = ERRORS[name]
    for g in (grain, spelt):
        with pytest.raises(error) as raised:
            g.experimental.get_element_spec(build(g))
        if error is ValueError:
            assert "does not implement `output_spec`" in str(raised.value)


def test_user_dataset_may_define_its_spec():
    class Points(spelt.MapDataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.zeros(2, np.float32)

        @property
        def _element_spec(self):
            return spelt.experimental.ShapeDtypeStruct(shape=(2,), dtype=np.float32)

    spec = spelt.experimental.get_element_spec(
        Points().shuffle(seed=1).batch(3, drop_remainder=True)
    )
    assert plain(spec) == ((3, 2), np.dtype(np.float32))
    with pytest.raises(NotImplementedError, match="not implemented for Plain"):
        spelt.experimental.get_element_spec(
            type(
                "Plain",
                (spelt.MapDataset,),
                {"__len__": lambda s: 1, "__getitem__": lambda s, i: i},
            )()
        )
