"""spelt.options, spelt.constants and spelt.transforms against Grain 0.2.18."""

import dataclasses
import functools
import logging
import typing

import numpy as np
import pytest

import grain
import grain.python as grain_python
from grain import transforms as grain_transforms
from grain._src.core import transforms as grain_transforms_impl
import spelt
import spelt.experimental
from spelt import constants
from spelt import options
from spelt import transforms


# ---------------------------------------------------------------------------
# ReadOptions / MultiprocessingOptions


def test_read_options_defaults_and_repr_match_grain():
    ours = options.ReadOptions()
    assert (ours.num_threads, ours.prefetch_buffer_size) == (16, 500)
    assert (
        repr(ours)
        == repr(grain_python.ReadOptions())
        == ("ReadOptions(num_threads=16, prefetch_buffer_size=500)")
    )
    custom = options.ReadOptions(num_threads=0, prefetch_buffer_size=0)
    assert repr(custom) == repr(grain_python.ReadOptions(0, 0))
    assert options.ReadOptions(4, 8) == options.ReadOptions(num_threads=4, prefetch_buffer_size=8)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_threads=-1),
        dict(prefetch_buffer_size=-5),
        dict(num_threads=-2, prefetch_buffer_size=-2),
    ],
)
def test_read_options_rejects_negative_like_grain(kwargs):
    with pytest.raises(ValueError) as ours:
        options.ReadOptions(**kwargs)
    with pytest.raises(ValueError) as theirs:
        grain_python.ReadOptions(**kwargs)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    "num_threads,buffer_size,warns",
    [(16, 8, True), (2, 1, True), (16, 0, False), (16, 16, False), (4, 500, False), (0, 0, False)],
)
def test_read_options_small_buffer_warning(caplog, num_threads, buffer_size, warns):
    with caplog.at_level(logging.WARNING, logger="spelt.options"):
        options.ReadOptions(num_threads=num_threads, prefetch_buffer_size=buffer_size)
    assert ("prefetch_buffer_size" in caplog.text) == warns


def test_options_are_slotted_dataclasses():
    read = options.ReadOptions()
    mp = options.MultiprocessingOptions()
    for obj in (read, mp):
        assert dataclasses.is_dataclass(obj)
        assert not hasattr(obj, "__dict__")
        with pytest.raises(AttributeError):
            obj.not_a_field = 1
    read.num_threads = 3  # Not frozen, as in Grain.
    assert read.num_threads == 3


def test_multiprocessing_options_match_grain():
    ours = options.MultiprocessingOptions()
    assert (ours.num_workers, ours.per_worker_buffer_size, ours.enable_profiling) == (0, 1, False)
    assert (
        repr(ours)
        == repr(grain_python.MultiprocessingOptions())
        == (
            "MultiprocessingOptions(num_workers=0, per_worker_buffer_size=1, "
            "enable_profiling=False)"
        )
    )
    assert repr(options.MultiprocessingOptions(4, 2, True)) == repr(
        grain_python.MultiprocessingOptions(4, 2, True)
    )
    assert [f.name for f in dataclasses.fields(ours)] == [
        f.name for f in dataclasses.fields(grain_python.MultiprocessingOptions)
    ]


# ---------------------------------------------------------------------------
# constants


def test_constants_match_grain():
    names = ["INDEX", "RECORD_KEY", "DATASET_INDEX", "EPOCH", "SEED", "RECORD", "META_FEATURES"]
    for name in names:
        assert getattr(constants, name) == getattr(grain.constants, name), name
    assert constants.INDEX == "_index"
    assert constants.RECORD_KEY == "_record_key"
    assert isinstance(constants.META_FEATURES, frozenset)
    assert len(constants.META_FEATURES) == 6


# ---------------------------------------------------------------------------
# transforms

_ABSTRACT = {
    "Map": {"map"},
    "RandomMap": {"random_map"},
    "MapWithIndex": {"map_with_index"},
    "TfRandomMap": {"np_random_map"},
    "Filter": {"filter"},
    "FlatMap": {"flat_map"},
    "DatasetSelectionMap": {"__len__", "__getitem__"},
}


@pytest.mark.parametrize("name", sorted(_ABSTRACT))
def test_abstract_bases_match_grain(name):
    ours = getattr(transforms, name)
    # grain.transforms does not export FlatMap; it lives in the core module.
    theirs = getattr(grain_transforms, name, None) or getattr(grain_transforms_impl, name)
    assert set(ours.__abstractmethods__) == _ABSTRACT[name]
    assert ours.__abstractmethods__ == theirs.__abstractmethods__
    with pytest.raises(TypeError):
        ours()
    # A subclass that forgets the method cannot be instantiated either.
    with pytest.raises(TypeError):
        type("Incomplete", (ours,), {})()


def test_concrete_transforms_work():
    class AddOne(transforms.Map):
        def map(self, element):
            return element + 1

    class Noise(transforms.RandomMap):
        def random_map(self, element, rng):
            return element + rng.integers(100)

    class WithIndex(transforms.MapWithIndex):
        def map_with_index(self, index, element):
            return (index, element)

    class Even(transforms.Filter):
        def filter(self, element):
            return element % 2 == 0

    class Split(transforms.FlatMap):
        max_fan_out = 3

        def flat_map(self, element):
            return [element] * 3

    class NpNoise(transforms.TfRandomMap):
        def np_random_map(self, element, rng):
            return element * rng.random()

    class Select(transforms.DatasetSelectionMap):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            return (index % 2, index // 2)

    assert AddOne().map(1) == 2
    rng = np.random.Generator(np.random.Philox(key=1))
    expected = 5 + np.random.Generator(np.random.Philox(key=1)).integers(100)
    assert Noise().random_map(5, rng) == expected
    assert WithIndex().map_with_index(7, "a") == (7, "a")
    assert [x for x in range(5) if Even().filter(x)] == [0, 2, 4]
    assert Split().flat_map("x") == ["x", "x", "x"]
    assert Split.max_fan_out == 3
    assert 0 <= NpNoise().np_random_map(1.0, rng) < 1.0
    assert len(Select()) == 4 and Select()[3] == (1, 1)
    assert isinstance(AddOne(), transforms.Map)
    assert not isinstance(AddOne(), transforms.Filter)


def test_flat_map_declares_max_fan_out():
    assert typing.get_type_hints(transforms.FlatMap)["max_fan_out"] is int


def test_batch_matches_grain():
    ours = transforms.Batch(32)
    assert (ours.batch_size, ours.drop_remainder, ours.batch_fn) == (32, False, None)
    assert (
        repr(ours)
        == repr(grain_transforms.Batch(32))
        == ("Batch(batch_size=32, drop_remainder=False, batch_fn=None)")
    )
    with_fn = transforms.Batch(batch_size=4, drop_remainder=True, batch_fn=list)
    assert repr(with_fn) == repr(
        grain_transforms.Batch(batch_size=4, drop_remainder=True, batch_fn=list)
    )
    assert [f.name for f in dataclasses.fields(ours)] == [
        "batch_size",
        "drop_remainder",
        "batch_fn",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.batch_size = 1
    assert transforms.Batch(8, True) == transforms.Batch(8, True)
    assert hash(transforms.Batch(8, True)) == hash(transforms.Batch(8, True))


@pytest.mark.parametrize("size", [0, -1])
def test_batch_constructor_rejects_a_non_positive_size_at_once(size):
    # Grain rejects a bad batch_size only when the batch is applied; Spelt at construction
    # (docs/compatibility.md, Deliberate differences).
    grain_transforms.Batch(size)
    with pytest.raises(ValueError, match=f"Batch: batch_size must be positive, got {size}"):
        transforms.Batch(size)


def test_transformation_aliases_match_grain():
    ours = [t.__name__ for t in typing.get_args(transforms.Transformation)]
    theirs = [t.__name__ for t in typing.get_args(grain_transforms.Transformation)]
    assert ours == theirs
    assert set(ours) == {
        "Batch",
        "Map",
        "RandomMap",
        "TfRandomMap",
        "Filter",
        "FlatMap",
        "MapWithIndex",
    }
    assert typing.get_origin(transforms.Transformations) is typing.get_origin(
        grain_transforms.Transformations
    )
    assert typing.get_args(transforms.Transformations) == (transforms.Transformation,)


class _PlainMap(transforms.Map):
    def map(self, element):
        return element


class _ReprMap(transforms.Map):
    def map(self, element):
        return element

    def __repr__(self):
        return "ReprMap<custom>"


class _PlainMapWithIndex(transforms.MapWithIndex):
    def map_with_index(self, index, element):
        return element


def _module_function(x):
    return x


class _GrainPlainMap(grain_transforms.Map):
    def map(self, element):
        return element


class _GrainReprMap(grain_transforms.Map):
    def map(self, element):
        return element

    def __repr__(self):
        return "ReprMap<custom>"


def test_pretty_transform_name_matches_grain():
    pretty = transforms.get_pretty_transform_name
    grain_pretty = grain_transforms_impl.get_pretty_transform_name
    assert pretty(_PlainMap()) == "_PlainMap"
    assert grain_pretty(_GrainPlainMap()) == "_GrainPlainMap"
    assert pretty(_ReprMap()) == grain_pretty(_GrainReprMap()) == "ReprMap<custom>"
    assert pretty(transforms.Batch(2)) == grain_pretty(grain_transforms.Batch(2))
    for fn in [_module_function, len, functools.partial(_module_function), lambda x: x]:
        assert pretty(fn) == grain_pretty(fn)
    assert pretty(_module_function).startswith("_module_function @ .../")
    assert pretty(_module_function).endswith(
        f"test_options_transforms.py:{_module_function.__code__.co_firstlineno}"
    )
    assert pretty(len) == "len"
    # MapWithIndex is not special-cased (in Grain either): named by repr.
    instance = _PlainMapWithIndex()
    assert pretty(instance) == repr(instance)


def test_apply_refuses_what_grain_refuses():
    """A TfRandomMap, or anything that is not one of the applied kinds, raises Grain's
    NotImplementedError in both libraries."""

    def tf_random_map(base):
        return type("AddOne", (base,), {"np_random_map": lambda self, x, rng: x + 1})()

    for lib, base in ((spelt, transforms.TfRandomMap), (grain, grain_transforms.TfRandomMap)):
        ds = lib.MapDataset.range(10)
        for unsupported in (tf_random_map(base), object()):
            with pytest.raises(NotImplementedError, match="is not supported"):
                lib.experimental.apply_transformations(ds, unsupported)
            with pytest.raises(NotImplementedError, match="is not supported"):
                ds.apply(unsupported)
