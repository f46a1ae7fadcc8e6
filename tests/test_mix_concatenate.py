"""MapDataset.concatenate / MapDataset.mix against Grain 0.2.18 itself."""

import pickle

import grain
import pytest

import spelt


def _pairs(lengths):
    return (
        [spelt.MapDataset.range(100 * i, 100 * i + n) for i, n in enumerate(lengths)],
        [grain.MapDataset.range(100 * i, 100 * i + n) for i, n in enumerate(lengths)],
    )


def _same(ours, theirs, stop):
    assert len(ours) == len(theirs)
    got = [ours[i] for i in range(stop)]
    want = [theirs[i] for i in range(stop)]
    assert got == want


@pytest.mark.parametrize("lengths", [[3], [3, 5], [4, 0, 2], [0, 3], [1, 7, 2, 5]])
def test_concatenate_matches_grain(lengths):
    ours, theirs = _pairs(lengths)
    a = spelt.MapDataset.concatenate(ours)
    b = grain.MapDataset.concatenate(theirs)
    _same(a, b, 4 * sum(lengths))  # several epochs


def test_concatenate_shuffled_components_and_seed():
    ours = spelt.MapDataset.concatenate(
        [spelt.MapDataset.range(5).shuffle(seed=3), spelt.MapDataset.range(10, 17).shuffle(seed=9)]
    )
    theirs = grain.MapDataset.concatenate(
        [grain.MapDataset.range(5).shuffle(seed=3), grain.MapDataset.range(10, 17).shuffle(seed=9)]
    )
    _same(ours, theirs, 60)
    # default seeds derive through the components
    a = spelt.MapDataset.concatenate([spelt.MapDataset.range(6).seed(7), spelt.MapDataset.range(4)])
    b = grain.MapDataset.concatenate([grain.MapDataset.range(6).seed(7), grain.MapDataset.range(4)])
    _same(a.shuffle(), b.shuffle(), 40)
    _same(
        a.random_map(lambda x, r: (x, int(r.integers(1000)))),
        b.random_map(lambda x, r: (x, int(r.integers(1000)))),
        25,
    )


def test_concatenate_infinite_raises():
    with pytest.raises(ValueError, match="Cannot concatenate infinite"):
        spelt.MapDataset.concatenate(
            [spelt.MapDataset.range(3).repeat(), spelt.MapDataset.range(2)]
        )


def test_concatenate_slice_and_iter():
    a = spelt.MapDataset.concatenate(_pairs([3, 4])[0])
    b = grain.MapDataset.concatenate(_pairs([3, 4])[1])
    assert list(a[2:6]) == list(b[2:6])
    assert list(a.to_iter_dataset()) == list(b.to_iter_dataset())


@pytest.mark.parametrize(
    "lengths,weights",
    [
        ([5, 3], None),
        ([5, 7], None),
        ([10, 10], [1, 2]),
        ([10, 4, 9], [0.2, 0.5, 0.3]),
        ([7, 30], [3, 0.7]),
        ([13, 11, 17], [1.0, 1.0, 1.0]),
        ([100, 50], [0.333, 0.667]),
        ([9], [2.5]),
    ],
)
def test_mix_matches_grain(lengths, weights):
    ours, theirs = _pairs(lengths)
    a = spelt.MapDataset.mix(ours, weights)
    b = grain.MapDataset.mix(theirs, weights)
    _same(a, b, 5 * len(b) + 7)  # beyond len: later epochs of the components
    for start in (0, 1000, 12345):
        assert [a[i] for i in range(start, start + 20)] == [b[i] for i in range(start, start + 20)]


def test_mix_shuffled_and_repeated_components():
    def build(m):
        return m.MapDataset.mix(
            [
                m.MapDataset.range(20).shuffle(seed=1).repeat(),
                m.MapDataset.range(100, 107).shuffle(seed=2).repeat(),
            ],
            [0.7, 0.3],
        )

    a, b = build(spelt), build(grain)
    assert len(a) == len(b)
    for start in (0, 10**6, 10**12):
        assert [a[i] for i in range(start, start + 50)] == [b[i] for i in range(start, start + 50)]


def test_mix_default_seed_derives_through_parents():
    a = spelt.MapDataset.mix([spelt.MapDataset.range(8).seed(5), spelt.MapDataset.range(50, 58)])
    b = grain.MapDataset.mix([grain.MapDataset.range(8).seed(5), grain.MapDataset.range(50, 58)])
    _same(a.shuffle(), b.shuffle(), 48)


def test_mix_errors_like_grain():
    for bad in ([0, 1], [1.0, 0.0]):
        with pytest.raises(ValueError, match="non-zero"):
            spelt.MapDataset.mix([spelt.MapDataset.range(3), spelt.MapDataset.range(3)], bad)
    with pytest.raises(ValueError, match="positive length"):
        spelt.MapDataset.mix([spelt.MapDataset.range(3), spelt.MapDataset.range(0)])


def test_pickle_and_to_iter():
    a = spelt.MapDataset.mix(
        [
            spelt.MapDataset.concatenate(
                [spelt.MapDataset.range(3), spelt.MapDataset.range(10, 12)]
            ),
            spelt.MapDataset.range(20, 30),
        ],
        [1, 2],
    )
    b = pickle.loads(pickle.dumps(a))
    assert [b[i] for i in range(40)] == [a[i] for i in range(40)]
    g = grain.MapDataset.mix(
        [
            grain.MapDataset.concatenate(
                [grain.MapDataset.range(3), grain.MapDataset.range(10, 12)]
            ),
            grain.MapDataset.range(20, 30),
        ],
        [1, 2],
    )
    assert list(a.to_iter_dataset()) == list(g.to_iter_dataset())
    assert list(a.map(lambda x: x * 2)) == list(g.map(lambda x: x * 2))
