"""spelt.sharding against Grain 0.2.18's sharding (the reference)."""

import dataclasses
import logging
import pickle
import sys
import types

import pytest

from grain import sharding as grain_sharding
from grain._src.core import sharding as grain_sharding_impl
from spelt import sharding


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(shard_index=0, shard_count=1),
        dict(shard_index=2, shard_count=3),
        dict(shard_index=1, shard_count=4, drop_remainder=True),
        dict(shard_index=0, shard_count=7, drop_remainder=False),
    ],
)
def test_shard_options_fields_and_repr_match_grain(kwargs):
    ours = sharding.ShardOptions(**kwargs)
    theirs = grain_sharding.ShardOptions(**kwargs)
    assert repr(ours) == repr(theirs)
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)
    assert [f.name for f in dataclasses.fields(ours)] == [
        "shard_index",
        "shard_count",
        "drop_remainder",
    ]


def test_shard_options_positional_and_default():
    options = sharding.ShardOptions(1, 2)
    assert (options.shard_index, options.shard_count) == (1, 2)
    assert options.drop_remainder is False


@pytest.mark.parametrize(
    "index,count",
    [(0, 0), (0, -1), (-1, 2), (2, 2), (5, 3), (-1, 0)],
)
def test_shard_options_validation_matches_grain(index, count):
    with pytest.raises(ValueError) as ours:
        sharding.ShardOptions(shard_index=index, shard_count=count)
    with pytest.raises(ValueError) as theirs:
        grain_sharding.ShardOptions(shard_index=index, shard_count=count)
    assert str(ours.value) == str(theirs.value)


def test_shard_options_is_frozen_and_hashable():
    options = sharding.ShardOptions(1, 3, drop_remainder=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.shard_index = 0
    assert options == sharding.ShardOptions(1, 3, True)
    assert hash(options) == hash(sharding.ShardOptions(1, 3, True))
    assert options != sharding.ShardOptions(1, 3, False)


def test_no_sharding():
    options = sharding.NoSharding()
    assert isinstance(options, sharding.ShardOptions)
    assert (options.shard_index, options.shard_count, options.drop_remainder) == (
        0,
        1,
        False,
    )
    assert repr(options) == ("NoSharding(shard_index=0, shard_count=1, drop_remainder=False)")
    assert repr(options) == repr(grain_sharding.NoSharding())
    assert options == sharding.NoSharding()
    # As in Grain, dataclass equality requires the same class.
    assert options != sharding.ShardOptions(0, 1)
    assert (grain_sharding.NoSharding() != grain_sharding.ShardOptions(0, 1)) == (
        options != sharding.ShardOptions(0, 1)
    )


@pytest.mark.parametrize(
    "options",
    [
        sharding.NoSharding(),
        sharding.ShardByJaxProcess(drop_remainder=True),
        sharding.ShardOptions(2, 5, True),
    ],
    ids=repr,
)
def test_pickle_round_trip(options):
    copy = pickle.loads(pickle.dumps(options))
    assert type(copy) is type(options)
    assert copy == options
    assert repr(copy) == repr(options)


def test_shard_by_jax_process_without_jax(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # makes `import jax` fail
    assert sharding.get_process_index_and_count() == (0, 1)
    options = sharding.ShardByJaxProcess()
    assert repr(options) == (
        "ShardByJaxProcess(shard_index=0, shard_count=1, drop_remainder=False)"
    )
    assert repr(sharding.ShardByJaxProcess(drop_remainder=True)) == repr(
        grain_sharding.ShardByJaxProcess(drop_remainder=True)
    )


def test_shard_by_jax_process_uses_jax(monkeypatch):
    fake_jax = types.ModuleType("jax")
    fake_jax.process_index = lambda: 2
    fake_jax.process_count = lambda: 4
    monkeypatch.setitem(sys.modules, "jax", fake_jax)
    ours = sharding.ShardByJaxProcess(drop_remainder=True)
    theirs = grain_sharding.ShardByJaxProcess(drop_remainder=True)
    assert (ours.shard_index, ours.shard_count, ours.drop_remainder) == (2, 4, True)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize(
    "num_examples,index,count,drop,expected",
    [
        (10, 0, 3, False, (0, 4)),
        (10, 1, 3, False, (4, 7)),
        (10, 2, 3, False, (7, 10)),
        (10, 0, 3, True, (0, 3)),
        (10, 2, 3, True, (6, 9)),
        (2, 2, 3, False, (2, 2)),
        (2, 2, 3, True, (0, 0)),
        (0, 0, 1, False, (0, 0)),
    ],
)
def test_even_split_values(num_examples, index, count, drop, expected):
    options = sharding.ShardOptions(index, count, drop)
    assert sharding.even_split(num_examples, options) == expected


def test_even_split_matches_grain_exhaustively():
    for num_examples in range(0, 40):
        for count in range(1, 9):
            for index in range(count):
                for drop in (False, True):
                    ours = sharding.even_split(
                        num_examples, sharding.ShardOptions(index, count, drop)
                    )
                    theirs = grain_sharding_impl.even_split(
                        num_examples, grain_sharding.ShardOptions(index, count, drop)
                    )
                    assert ours == theirs, (num_examples, index, count, drop)


@pytest.mark.parametrize("num_examples", [0, 1, 5, 17, 100])
@pytest.mark.parametrize("count", [1, 3, 8])
def test_even_split_partitions(num_examples, count):
    bounds = [
        sharding.even_split(num_examples, sharding.ShardOptions(i, count)) for i in range(count)
    ]
    covered = [x for start, end in bounds for x in range(start, end)]
    assert covered == list(range(num_examples))
    dropped = [
        sharding.even_split(num_examples, sharding.ShardOptions(i, count, True))
        for i in range(count)
    ]
    assert {end - start for start, end in dropped} == {num_examples // count}


def test_even_split_warns_only_when_dropping(caplog):
    with caplog.at_level(logging.WARNING, logger="spelt.sharding"):
        sharding.even_split(10, sharding.ShardOptions(0, 3, drop_remainder=True))
    assert "Dropping 1 examples of 10 examples" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="spelt.sharding"):
        sharding.even_split(9, sharding.ShardOptions(0, 3, drop_remainder=True))
        sharding.even_split(10, sharding.ShardOptions(0, 3, drop_remainder=False))
    assert caplog.text == ""


def test_validation_is_the_engines():
    # ShardOptions validates through spelt._core.ShardOptions (spelt/sampler.h).
    from spelt import _core  # pylint: disable=import-outside-toplevel

    with pytest.raises(ValueError) as engine:
        _core.ShardOptions(3, 3)
    with pytest.raises(ValueError) as face:
        sharding.ShardOptions(3, 3)
    assert str(engine.value) == str(face.value)
    options = sharding.engine_options(sharding.ShardOptions(1, 4, True))
    assert (options.shard_index, options.shard_count, options.drop_remainder) == (1, 4, True)
    assert options.global_index(5) == 21
    # Any object with Grain's three fields converts (Grain's own ShardOptions too).
    assert sharding.engine_options(grain_sharding.ShardOptions(2, 3)).shard_index == 2


def test_numpy_integer_fields_match_grain():
    import numpy as np  # pylint: disable=import-outside-toplevel

    ours = sharding.ShardOptions(np.int64(1), np.int64(3))
    theirs = grain_sharding.ShardOptions(np.int64(1), np.int64(3))
    assert repr(ours) == repr(theirs)
    assert sharding.even_split(np.int64(10), ours) == grain_sharding_impl.even_split(
        np.int64(10), theirs
    )
    with pytest.raises(ValueError) as ours_error:
        sharding.ShardOptions(np.int64(3), np.int64(3))
    with pytest.raises(ValueError) as theirs_error:
        grain_sharding.ShardOptions(np.int64(3), np.int64(3))
    assert str(ours_error.value) == str(theirs_error.value)


def test_shard_by_jax_process_propagates_jax_errors(monkeypatch):
    # Grain falls back to (0, 1) only when `import jax` fails.
    fake_jax = types.ModuleType("jax")

    def broken():
        raise RuntimeError("no backend")

    fake_jax.process_index = broken
    fake_jax.process_count = lambda: 1
    monkeypatch.setitem(sys.modules, "jax", fake_jax)
    with pytest.raises(RuntimeError, match="no backend"):
        sharding.ShardByJaxProcess()
    with pytest.raises(RuntimeError, match="no backend"):
        grain_sharding.ShardByJaxProcess()


def test_shard_by_jax_process_without_jax_in_a_fresh_interpreter():
    # Without jax (hidden: it is installed for orbax-checkpoint) both libraries shard as 0 of 1
    # (a fresh interpreter, so no earlier test's jax stub is in sys.modules).
    import subprocess  # pylint: disable=import-outside-toplevel

    code = (
        "import importlib.util, logging\n"
        "logging.getLogger('absl').setLevel(logging.ERROR)\n"
        "import sys\n"
        "sys.modules['jax'] = None\n"
        "import grain, spelt\n"
        "for d in (False, True):\n"
        "  ours, theirs = spelt.sharding.ShardByJaxProcess(d), grain.sharding.ShardByJaxProcess(d)\n"
        "  assert repr(ours) == repr(theirs), (ours, theirs)\n"
        "  assert (ours.shard_index, ours.shard_count) == (0, 1)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
