"""The one converter of iterator states between the engine and Python (cpp/python/py_state.h):
Python objects built directly, Grain's types where JSON has none, exact errors with the path."""

import numpy as np
import pytest

import spelt


def _iterator():
    it = iter(spelt.MapDataset.range(10).to_iter_dataset().map_with_index(lambda i, x: (i, x)))
    next(it)
    return it


def test_a_state_round_trips_with_python_types():
    it = _iterator()
    state = it.get_state()
    assert state == {"parent": {"next_index": 1}, "counter": 1}
    assert type(state["counter"]) is int
    it.set_state({"parent": {"next_index": np.int64(4)}, "counter": np.int32(4)})
    assert next(it) == (4, 4)


@pytest.mark.parametrize(
    "state,error,message",
    [
        (
            {"parent": {"next_index": 1}, "counter": 2**64},
            IndexError,
            r"state\['counter'\]: 18446744073709551616 is out of range",
        ),
        (
            {"parent": {"next_index": -(2**63) - 1}, "counter": 0},
            IndexError,
            r"state\['parent'\]\['next_index'\]: -9223372036854775809",
        ),
        (
            {"parent": [1, object()], "counter": 0},
            ValueError,
            r"state\['parent'\]\[1\]: a value of type object has no JSON form",
        ),
        ({1.5: 0}, ValueError, "a key must be a str or an int, got float"),
    ],
)
def test_values_with_no_engine_form_raise_naming_their_path(state, error, message):
    with pytest.raises(error, match=message):
        _iterator().set_state(state)


def test_interleave_future_states_have_int_keys_and_round_trip():
    datasets = [spelt.MapDataset.range(3), spelt.MapDataset.range(2), spelt.MapDataset.range(2)]
    it = iter(spelt.experimental.InterleaveIterDataset(datasets, cycle_length=2))
    shards = it.get_shard_states()
    shards[2] = {"exhausted": 0, "state": {"next_index": 1}}
    it.set_shard_states(shards)
    state = it.get_state()
    assert state["future_states"] == {2: {"next_index": 1}}
    restored = iter(spelt.experimental.InterleaveIterDataset(datasets, cycle_length=2))
    restored.set_state(state)
    assert list(restored) == list(it)


@pytest.mark.parametrize("counter", [2**63, 2**64 - 1])
def test_a_state_integer_beyond_int64_is_refused_with_its_value(counter):
    # JSON holds [2**63, 2**64) as unsigned; read as int64 it was "-1" or "-9223372036854775808".
    it = iter(spelt.MapDataset.range(4).to_iter_dataset().map_with_index(lambda i, x: x))
    with pytest.raises(IndexError, match=f"'counter' is {counter}, beyond"):
        it.set_state({"parent": {"next_index": 0}, "counter": counter})
    it.set_state({"parent": {"next_index": 1}, "counter": 2**63 - 1})
    assert it.get_state()["counter"] == 2**63 - 1 and next(it) == 1
