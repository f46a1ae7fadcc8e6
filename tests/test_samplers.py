"""spelt.samplers and spelt.record against Grain 0.2.18 (the reference)."""

import dataclasses
import itertools
import sys

import numpy as np
import pytest

import grain.python as grain
from spelt import record
from spelt import samplers
from spelt import sharding


def _grain_shard_options(options):
    """The Grain object equivalent to a spelt sharding object."""
    if isinstance(options, sharding.NoSharding):
        return grain.NoSharding()
    return grain.ShardOptions(options.shard_index, options.shard_count, options.drop_remainder)


def _keys(sampler, n):
    return [sampler[i].record_key for i in range(n)]


# ---------------------------------------------------------------------------
# IndexSampler


def test_index_sampler_golden():
    sampler = samplers.IndexSampler(num_records=5, shuffle=True, num_epochs=2, seed=32)
    assert len(sampler) == 10
    assert _keys(sampler, 10) == [2, 4, 3, 0, 1, 0, 2, 4, 1, 3]


def test_index_sampler_unshuffled_unsharded_repeats_in_order():
    sampler = samplers.IndexSampler(num_records=4, num_epochs=3)
    assert len(sampler) == 12
    assert _keys(sampler, 12) == [0, 1, 2, 3] * 3
    assert [sampler[i].index for i in range(12)] == list(range(12))
    assert all(sampler[i].rng is None for i in range(12))


def test_index_sampler_sharded_keys_are_strided_over_shard_block():
    # 10 records, shard 1 of 3 owns keys [4, 7); global index g reads the
    # shard's key number g // 3.
    options = sharding.ShardOptions(1, 3)
    sampler = samplers.IndexSampler(10, options, num_epochs=2)
    assert len(sampler) == 20
    assert _keys(sampler, 20) == [4, 4, 4, 5, 5, 5, 6, 6, 6, 4, 4, 4, 5, 5, 5, 6, 6, 6, 4, 4]


def _configs():
    for num_records, (index, count, drop), shuffle, num_epochs in itertools.product(
        [1, 3, 7, 10, 13, 33],
        [
            (0, 1, False),
            (None, None, None),
            (0, 2, False),
            (1, 2, True),
            (2, 3, False),
            (1, 3, True),
            (0, 4, True),
            (3, 4, False),
        ],
        [False, True],
        [None, 1, 3],
    ):
        if index is None:
            options = sharding.NoSharding()
        else:
            options = sharding.ShardOptions(index, count, drop)
        if num_records < options.shard_count:
            continue  # Empty shards: covered by test_index_sampler_empty_shard.
        yield num_records, options, shuffle, num_epochs


@pytest.mark.parametrize(
    "num_records,options,shuffle,num_epochs",
    list(_configs()),
    ids=lambda x: repr(x),
)
def test_index_sampler_matches_grain(num_records, options, shuffle, num_epochs):
    seed = 12345 if shuffle else None
    ours = samplers.IndexSampler(
        num_records, options, shuffle=shuffle, num_epochs=num_epochs, seed=seed
    )
    theirs = grain.IndexSampler(
        num_records,
        _grain_shard_options(options),
        shuffle=shuffle,
        num_epochs=num_epochs,
        seed=seed,
    )
    assert len(ours) == len(theirs)
    assert repr(ours) == repr(theirs)
    # Infinite: a bit over two epochs of this shard's keys.
    n = len(ours) if num_epochs is not None else 2 * num_records + 5
    assert _keys(ours, n) == _keys(theirs, n)
    if num_epochs is not None:
        with pytest.raises(IndexError):
            ours[len(ours)]


@pytest.mark.parametrize("seed", [0, 1, 7, 2**31, 2**32 - 1])
def test_index_sampler_seeds_match_grain(seed):
    # Includes the per-epoch seed wrapping around 2**32.
    for options in [sharding.NoSharding(), sharding.ShardOptions(1, 3, True)]:
        ours = samplers.IndexSampler(11, options, shuffle=True, num_epochs=4, seed=seed)
        theirs = grain.IndexSampler(
            11,
            _grain_shard_options(options),
            shuffle=True,
            num_epochs=4,
            seed=seed,
        )
        assert _keys(ours, len(ours)) == _keys(theirs, len(theirs))


def test_index_sampler_shuffle_is_a_fresh_permutation_each_epoch():
    sampler = samplers.IndexSampler(50, shuffle=True, num_epochs=3, seed=9)
    epochs = [_keys(sampler, 150)[e * 50 : (e + 1) * 50] for e in range(3)]
    for keys in epochs:
        assert sorted(keys) == list(range(50))
    assert epochs[0] != list(range(50))
    assert epochs[0] != epochs[1] != epochs[2]


def test_index_sampler_shuffled_shard_stays_in_its_block():
    options = sharding.ShardOptions(2, 3)  # 20 records: block [14, 20)
    sampler = samplers.IndexSampler(20, options, shuffle=True, num_epochs=1, seed=3)
    keys = _keys(sampler, len(sampler))
    assert set(keys) == set(range(14, 20))


def test_index_sampler_rng_matches_grain():
    ours = samplers.IndexSampler(6, shuffle=False, num_epochs=1, seed=77)
    theirs = grain.IndexSampler(6, shuffle=False, num_epochs=1, seed=77)
    for i in range(6):
        rng = ours[i].rng
        assert isinstance(rng, np.random.Generator)
        assert isinstance(rng.bit_generator, np.random.Philox)
        assert rng.integers(0, 2**62, size=4).tolist() == (
            theirs[i].rng.integers(0, 2**62, size=4).tolist()
        )
    expected = np.random.Generator(np.random.Philox(key=77 + 3)).random(3)
    np.testing.assert_array_equal(ours[3].rng.random(3), expected)


def test_index_sampler_infinite_len_and_large_index():
    ours = samplers.IndexSampler(7, sharding.ShardOptions(1, 2), shuffle=True, seed=5)
    theirs = grain.IndexSampler(7, grain.ShardOptions(1, 2), shuffle=True, seed=5)
    assert len(ours) == sys.maxsize
    assert ours._max_index is None
    for i in [10**6, 10**6 + 1, 123456789]:
        assert ours[i].record_key == theirs[i].record_key
        assert ours[i].index == i


def test_index_sampler_attributes():
    options = sharding.ShardOptions(1, 4, drop_remainder=True)
    sampler = samplers.IndexSampler(10, options, shuffle=True, num_epochs=3, seed=8)
    assert sampler._num_records == 10
    assert sampler._shard_options is options
    assert sampler._shuffle is True
    assert sampler._num_epochs == 3
    assert sampler._seed == 8
    # drop_remainder: 2 records per shard * 4 shards * 3 epochs.
    assert sampler._max_index == 24 == len(sampler)


def test_index_sampler_repr():
    sampler = samplers.IndexSampler(5, shuffle=True, num_epochs=2, seed=32)
    assert repr(sampler) == (
        "IndexSampler(num_records=5, shard_options=NoSharding(shard_index=0, "
        "shard_count=1, drop_remainder=False), shuffle=True, num_epochs=2, "
        "seed=32)"
    )


@pytest.mark.parametrize(
    "kwargs,error",
    [
        (dict(num_records=0), ValueError),
        (dict(num_records=-3), ValueError),
        (dict(num_records=5, num_epochs=0), ValueError),
        (dict(num_records=5, num_epochs=-1), ValueError),
        (dict(num_records=5, shuffle=True), ValueError),
        (dict(num_records=5, shuffle=True, seed=1.5), TypeError),
        (dict(num_records=5, shuffle=True, seed=np.int64(3)), TypeError),
        (dict(num_records=5, shuffle=True, seed=-1), ValueError),
        (dict(num_records=5, seed=-1), ValueError),
        (dict(num_records=5, shuffle=True, seed=2**32), ValueError),
        (dict(num_records=5, seed=2**40), ValueError),
        # Validation order: num_records is checked first, the seed's type after
        # num_records and num_epochs.
        (dict(num_records=0, num_epochs=0, shuffle=True), ValueError),
        (dict(num_records=0, shuffle=True, seed=1.5), ValueError),
        (dict(num_records=5, num_epochs=0, shuffle=True, seed=np.int64(3)), ValueError),
        (dict(num_records=5, num_epochs=-2, seed="x"), ValueError),
    ],
)
def test_index_sampler_validation_matches_grain(kwargs, error):
    with pytest.raises(error) as ours:
        samplers.IndexSampler(**kwargs)
    with pytest.raises(error) as theirs:
        grain.IndexSampler(**kwargs)
    assert str(ours.value) == str(theirs.value)


def test_index_sampler_accepts_boundary_seeds():
    assert samplers.IndexSampler(3, seed=0)[0].rng is not None
    sampler = samplers.IndexSampler(3, shuffle=True, num_epochs=1, seed=2**32 - 1)
    assert sorted(_keys(sampler, 3)) == [0, 1, 2]


@pytest.mark.parametrize("num_epochs", [None, 2])
@pytest.mark.parametrize("index", [-1, -100])
def test_index_sampler_negative_index_matches_grain(num_epochs, index):
    with pytest.raises(IndexError) as ours:
        samplers.IndexSampler(4, num_epochs=num_epochs)[index]
    with pytest.raises(IndexError) as theirs:
        grain.IndexSampler(4, num_epochs=num_epochs)[index]
    assert str(ours.value) == str(theirs.value)


def test_index_sampler_out_of_range_message_matches_grain():
    with pytest.raises(IndexError) as ours:
        samplers.IndexSampler(4, num_epochs=2)[8]
    with pytest.raises(IndexError) as theirs:
        grain.IndexSampler(4, num_epochs=2)[8]
    assert str(ours.value) == str(theirs.value)
    assert "Got index 8" in str(ours.value)


@pytest.mark.parametrize("drop", [False, True])
def test_index_sampler_empty_shard(drop):
    # 2 records over 3 shards: shard 2 owns nothing.
    options = sharding.ShardOptions(2, 3, drop)
    gopts = grain.ShardOptions(2, 3, drop)
    ours = samplers.IndexSampler(2, options, num_epochs=1)
    theirs = grain.IndexSampler(2, gopts, num_epochs=1)
    assert len(ours) == len(theirs) == (0 if drop else 2)
    if drop:
        with pytest.raises(IndexError):
            ours[0]
    else:
        with pytest.raises(ZeroDivisionError):
            ours[0]
        with pytest.raises(ZeroDivisionError):
            theirs[0]


# ---------------------------------------------------------------------------
# SequentialSampler


@pytest.mark.parametrize("num_records", [1, 5, 10])
@pytest.mark.parametrize(
    "options",
    [
        sharding.NoSharding(),
        sharding.ShardOptions(1, 3),
        sharding.ShardOptions(2, 3, True),
        sharding.ShardOptions(0, 4, True),
    ],
    ids=repr,
)
def test_sequential_sampler_matches_grain(num_records, options):
    ours = samplers.SequentialSampler(num_records, options, seed=4)
    theirs = grain.SequentialSampler(num_records, _grain_shard_options(options), seed=4)
    assert len(ours) == len(theirs)
    assert ours._max_index == len(ours)
    assert repr(ours) == repr(theirs)
    for i in range(len(ours)):
        assert ours[i].index == ours[i].record_key == theirs[i].record_key == i
        assert ours[i].rng.integers(1 << 60) == theirs[i].rng.integers(1 << 60)
    with pytest.raises(IndexError) as ours_error:
        ours[len(ours)]
    with pytest.raises(IndexError) as theirs_error:
        theirs[len(theirs)]
    assert str(ours_error.value) == str(theirs_error.value)


def test_sequential_sampler_defaults_and_errors():
    sampler = samplers.SequentialSampler(3)
    assert len(sampler) == 3
    assert sampler[2] == record.RecordMetadata(index=2, record_key=2, rng=None)
    assert repr(sampler) == (
        "SequentialSampler(num_records=3, shard_options=NoSharding("
        "shard_index=0, shard_count=1, drop_remainder=False))"
    )
    assert len(samplers.SequentialSampler(10, sharding.ShardOptions(0, 4, True))) == 8
    with pytest.raises(IndexError):
        sampler[-1]
    with pytest.raises(ValueError) as ours:
        samplers.SequentialSampler(0)
    with pytest.raises(ValueError) as theirs:
        grain.SequentialSampler(0)
    assert str(ours.value) == str(theirs.value)


def test_samplers_satisfy_protocol():
    def first_key(sampler: samplers.Sampler) -> int:
        return sampler[0].record_key

    assert first_key(samplers.SequentialSampler(2)) == 0
    assert first_key(samplers.IndexSampler(5, shuffle=True, seed=32)) == 2
    assert samplers.Sampler.__getitem__.__name__ == "__getitem__"


# ---------------------------------------------------------------------------
# RecordMetadata / Record


def test_record_metadata_fields_repr_str_match_grain():
    ours = record.RecordMetadata(index=3, record_key=7)
    theirs = grain.RecordMetadata(index=3, record_key=7)
    assert repr(ours) == repr(theirs) == ("RecordMetadata(index=3, record_key=7, rng=None)")
    assert str(ours) == str(theirs)
    assert [f.name for f in dataclasses.fields(ours)] == ["index", "record_key", "rng"]
    assert record.RecordMetadata(5) == record.RecordMetadata(5, None, None)
    rng = np.random.Generator(np.random.Philox(key=1))
    assert str(record.RecordMetadata(1, 2, rng)) == str(grain.RecordMetadata(1, 2, rng))
    assert not hasattr(ours, "__dict__")  # slots, as in Grain


def test_record_metadata_remove_record_key():
    without_key = record.RecordMetadata(index=1)
    assert without_key.remove_record_key() is without_key
    rng = np.random.Generator(np.random.Philox(key=2))
    with_key = record.RecordMetadata(index=4, record_key=9, rng=rng)
    removed = with_key.remove_record_key()
    assert removed is not with_key
    assert removed == record.RecordMetadata(index=4, record_key=None, rng=rng)
    assert with_key.record_key == 9  # The original is unchanged.


def test_record():
    metadata = record.RecordMetadata(index=0, record_key=0)
    rec = record.Record(metadata=metadata, data={"x": 1})
    assert rec.metadata is metadata
    assert rec.data == {"x": 1}
    assert repr(rec) == repr(grain.Record(grain.RecordMetadata(index=0, record_key=0), {"x": 1}))
    assert [f.name for f in dataclasses.fields(rec)] == ["metadata", "data"]
    assert record.Record[int] is not None  # Generic, as in Grain.
    assert not hasattr(rec, "__dict__")


# ---------------------------------------------------------------------------
# Faces over the engine's samplers


def _metadata(sampler, indices):
    """(index, record_key, first draws of rng or None) of sampler[i]."""
    out = []
    for i in indices:
        m = sampler[i]
        draws = None if m.rng is None else m.rng.integers(0, 2**63, size=3).tolist()
        out.append((m.index, m.record_key, draws))
    return out


@pytest.mark.parametrize("seed", [None, 0, 5, 2**31 + 7, 2**32 - 2, 2**32 - 1])
@pytest.mark.parametrize("num_epochs", [None, 1, 4])
@pytest.mark.parametrize(
    "shard", [None, (0, 3, False), (2, 3, False), (1, 4, True), (3, 4, False)], ids=str
)
@pytest.mark.parametrize("num_records", [1, 10, 11])
def test_index_sampler_metadata_matches_grain(seed, num_epochs, shard, num_records):
    # Records, rngs and lengths over shard remainders, infinite epochs and seeds whose
    # per-epoch seed (seed + epoch) wraps around 2**32.
    if shard is not None and num_records < shard[1]:
        num_records += shard[1]
    ours_options = sharding.NoSharding() if shard is None else sharding.ShardOptions(*shard)
    for shuffle in [False, True] if seed is not None else [False]:
        ours = samplers.IndexSampler(num_records, ours_options, shuffle, num_epochs, seed)
        theirs = grain.IndexSampler(
            num_records, _grain_shard_options(ours_options), shuffle, num_epochs, seed
        )
        assert len(ours) == len(theirs)
        assert repr(ours) == repr(theirs)
        assert ours._max_index == theirs._max_index
        n = len(ours) if num_epochs is not None else 5 * num_records + 3
        indices = list(range(n)) + [10**12 + 3] * (num_epochs is None)
        assert _metadata(ours, indices) == _metadata(theirs, indices)


def test_index_sampler_pickle_round_trip():
    import pickle  # pylint: disable=import-outside-toplevel

    for sampler in [
        samplers.IndexSampler(13, sharding.ShardOptions(1, 3, True), True, 2, 2**32 - 1),
        samplers.IndexSampler(5),
        samplers.SequentialSampler(7, sharding.ShardOptions(0, 2, True), seed=3),
    ]:
        copy = pickle.loads(pickle.dumps(sampler))
        assert type(copy) is type(sampler)
        assert repr(copy) == repr(sampler)
        assert len(copy) == len(sampler)
        n = min(len(sampler), 40)
        assert _metadata(copy, range(n)) == _metadata(sampler, range(n))
        assert copy._spelt_sampler() is not sampler._spelt_sampler()


def test_faces_hand_the_engine_sampler_to_the_dataloader():
    sampler = samplers.IndexSampler(5, shuffle=True, seed=1)
    engine = sampler._spelt_sampler()
    assert engine is not None and len(engine) == len(sampler) == sys.maxsize
    assert [engine.record_key(g) for g in range(5)] == _keys(sampler, 5)
    assert engine.rng_key(3) == 4
    assert samplers.SequentialSampler(3)._spelt_sampler().rng_key(2) is None

    class Plain(samplers.IndexSampler):
        pass

    class Remapped(samplers.IndexSampler):
        def __getitem__(self, index):
            m = super().__getitem__(index)
            return record.RecordMetadata(m.index, m.record_key + 100, m.rng)

    class Shorter(samplers.SequentialSampler):
        def __len__(self):
            return 2

    assert Plain(5)._spelt_sampler() is not None
    # The DataLoader must call these overrides: no engine sampler.
    assert Remapped(5)._spelt_sampler() is None
    assert Shorter(5)._spelt_sampler() is None


def test_index_sampler_index_types_match_grain():
    ours = samplers.IndexSampler(9, shuffle=True, num_epochs=2, seed=4)
    theirs = grain.IndexSampler(9, shuffle=True, num_epochs=2, seed=4)
    for index in [np.int64(5), np.int64(17), True]:
        m, t = ours[index], theirs[index]
        assert m.index is index and t.index is index
        assert m.record_key == t.record_key
        assert m.rng.integers(2**40) == t.rng.integers(2**40)


def test_index_sampler_non_int_seed_without_shuffle_is_a_type_error():
    # Grain raises AttributeError ('numpy.int64' has no 'bit_length') by accident here.
    with pytest.raises(TypeError, match="Expected seed of int type"):
        samplers.IndexSampler(5, seed=np.int64(3))


def test_index_sampler_huge_num_epochs_overflow():
    with pytest.raises(OverflowError, match="num_epochs"):
        samplers.IndexSampler(10**9, num_epochs=10**12)


@pytest.mark.parametrize("index", [0, 1, 2, 5])
def test_sequential_sampler_negative_seed_matches_grain(index):
    # Grain does not check SequentialSampler's seed: record g's Philox key seed + g is
    # rejected by numpy only while negative.
    ours = samplers.SequentialSampler(6, seed=-2)
    theirs = grain.SequentialSampler(6, seed=-2)
    if index < 2:
        with pytest.raises(ValueError):
            theirs[index]
        with pytest.raises(ValueError, match="negative"):
            ours[index]
    else:
        assert _metadata(ours, [index]) == _metadata(theirs, [index])


def test_empty_shard_raises_zero_division_like_grain():
    ours = samplers.IndexSampler(2, sharding.ShardOptions(2, 3), num_epochs=None)
    theirs = grain.IndexSampler(2, grain.ShardOptions(2, 3), num_epochs=None)
    with pytest.raises(ZeroDivisionError, match="owns no records"):
        ours[5]
    with pytest.raises(ZeroDivisionError):
        theirs[5]
