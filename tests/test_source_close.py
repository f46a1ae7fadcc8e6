"""Who calls a data source's ``close()`` (docs/compatibility.md, "An iterator's close() closes
its plain data sources").

Grain 0.2.18 (and Grain's main branch when this was written) never calls a data source's own
``close()``: its documentation says a source that is not a context manager "will be used
as-is", and nothing in its DataLoader, its ``MapDataset.source`` or its iterators' ``close()``
reaches the source (grain PR #1185, which would call it from ``DatasetIterator.close()``, is
not merged). Spelt does (issue 22): an iterator's ``close()`` calls ``close()`` once on each
plain source (not a context manager) that its pipeline reads; ending the stream or dropping the
iterator does not. A SharedMemoryDataSource is left open (its ``close()`` empties it, so the
next iterator would read nothing); a context-manager source is exited, not closed.
"""

import gc

import grain
import grain.python
import numpy as np
import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
import spelt.python


class _ClosableSource:
    """A plain random-access source (no __enter__/__exit__) that counts close() calls."""

    def __init__(self, n=6):
        self.n = n
        self.closes = 0

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        assert not self.closes, "read after close()"
        return index

    def close(self):
        self.closes += 1


class _ClosableContextSource(_ClosableSource):
    def __init__(self, n=6):
        super().__init__(n)
        self.exits = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.exits += 1


def _loader(g, source, worker_count=0):
    return g.DataLoader(
        data_source=source,
        sampler=g.python.SequentialSampler(len(source), g.python.NoSharding()),
        worker_count=worker_count,
    )


def _close(it):
    """it.close(); Grain 0.2.18's DataLoaderIterator has none (it is abandoned instead)."""
    close = getattr(it, "close", None)
    if close is not None:
        close()


def _exercise_loader(g, source):
    """A full pass, an abandoned iterator collected, a partial read then close() (twice where
    the iterator has a close()); returns the elements of the full pass."""
    loader = _loader(g, source)
    elements = list(iter(loader))
    abandoned = iter(loader)
    next(abandoned)
    del abandoned
    gc.collect()
    assert source.closes == 0  # neither the end of the stream nor garbage collection closes it
    it = iter(loader)
    next(it)
    _close(it)
    _close(it)
    return elements


@pytest.mark.parametrize("g,closes", [(spelt, 1), (grain, 0)], ids=["spelt", "grain"])
def test_data_loader_close_closes_a_plain_source_once(g, closes):
    source = _ClosableSource()
    assert _exercise_loader(g, source) == list(range(6))
    assert source.closes == closes


@pytest.mark.parametrize("g,closes", [(spelt, 2), (grain, 0)], ids=["spelt", "grain"])
def test_dataset_iterator_close_closes_the_source_once_per_iterator(g, closes):
    """Each iterator's first close() closes the source once; a second close() does not."""
    for read_options in (g.ReadOptions(num_threads=0), g.ReadOptions(num_threads=4)):
        source = _ClosableSource()
        ds = g.MapDataset.source(source)
        assert list(ds.to_iter_dataset()) == list(range(6))
        assert source.closes == 0
        for _ in range(2):  # a source that must reopen itself after close() to be read again
            source.closes = 0
            it = iter(ds.map(lambda x: x + 1).to_iter_dataset(read_options).batch(2))
            assert list(next(it)) == [1, 2]
            it.close()
            it.close()
            assert source.closes == (1 if closes else 0)


class _ReopeningSource(_ClosableSource):
    """A source that opens itself again when read after close() (e.g. a file handle)."""

    def __init__(self, n=6):
        super().__init__(n)
        self.opens = 1

    def __getitem__(self, index):
        if self.opens == self.closes:
            self.opens += 1
        return index


def test_each_closed_iterator_closes_the_source_once_and_later_iterators_read():
    source = _ReopeningSource()
    ds = spelt.MapDataset.source(source).to_iter_dataset()
    for epoch in range(3):
        it = iter(ds)
        assert list(it) == list(range(6))
        it.close()
        it.close()
        assert source.closes == epoch + 1
    assert source.opens == 3


def test_a_source_read_twice_in_a_pipeline_is_closed_once_and_each_source_is_closed():
    shared, other = _ClosableSource(), _ClosableSource(3)
    ds = spelt.MapDataset.concatenate(
        [spelt.MapDataset.source(shared), spelt.MapDataset.source(other)]
    )
    ds = spelt.MapDataset.mix([ds, spelt.MapDataset.source(shared).map(lambda x: -x)])
    it = iter(ds.to_iter_dataset())
    next(it)
    it.close()
    assert (shared.closes, other.closes) == (1, 1)
    inner = [spelt.MapDataset.source(shared), spelt.MapDataset.source(other).to_iter_dataset()]
    it = iter(spelt.experimental.InterleaveIterDataset(inner, cycle_length=2))
    it.close()
    assert (shared.closes, other.closes) == (2, 2)


def _plus_one(x):
    return x + 1


def test_worker_processes_close_the_consumers_source_once():
    source = _ClosableSource()
    it = iter(_loader(spelt, source, worker_count=2))
    assert list(it) == list(range(6))
    assert source.closes == 0
    it.close()
    it.close()
    assert source.closes == 1
    source = _ClosableSource()
    options = spelt.MultiprocessingOptions(num_workers=2)
    it = iter(spelt.MapDataset.source(source).map(_plus_one).to_iter_dataset().mp_prefetch(options))
    assert next(it) == 1
    it.close()
    it.close()
    assert source.closes == 1


def test_a_data_loader_over_a_map_dataset_closes_the_sources_under_it():
    source = _ClosableSource()
    loader = spelt.DataLoader(
        data_source=spelt.MapDataset.source(source).slice([5, 0, 3]),
        sampler=spelt.samplers.SequentialSampler(3, spelt.sharding.NoSharding()),
    )
    it = iter(loader)
    assert next(it) == 5
    it.close()
    it.close()
    assert source.closes == 1


def test_close_through_prefetch_packing_and_elastic_iterators():
    class Arrays(_ClosableSource):
        def __getitem__(self, index):
            return {"x": np.arange(index % 3 + 1)}

    source = Arrays()
    packed = spelt.experimental.FirstFitPackIterDataset(
        spelt.MapDataset.source(source).to_iter_dataset(),
        length_struct={"x": 4},
        num_packing_bins=2,
    )
    it = iter(packed)
    next(it)
    it.close()
    assert source.closes == 1
    source = _ClosableSource()
    it = spelt.experimental.ThreadPrefetchDatasetIterator(
        iter(spelt.MapDataset.source(source).to_iter_dataset()), 2
    )
    next(it)
    it.close()
    it.close()
    assert source.closes == 1
    source = _ClosableSource()
    elastic = spelt.experimental.ElasticIterator(
        spelt.MapDataset.source(source), 2, spelt.sharding.NoSharding()
    )
    assert list(next(elastic)) == [0, 1]
    elastic.set_state({"global_next_index": 4})  # a new host iterator, the same source
    assert source.closes == 0
    assert list(next(elastic)) == [4, 5]
    elastic.close()
    elastic.close()
    assert source.closes == 1


class _FailingClose(_ClosableSource):
    def close(self):
        super().close()
        raise OSError("cannot close")


def test_an_error_of_close_is_raised_after_every_source_was_closed_and_only_once():
    failing, other = _FailingClose(), _ClosableSource()
    ds = spelt.MapDataset.concatenate(
        [spelt.MapDataset.source(failing), spelt.MapDataset.source(other)]
    )
    it = iter(ds.to_iter_dataset())
    next(it)
    with pytest.raises(OSError, match="cannot close"):
        it.close()
    it.close()  # closed already: no second call, no error
    assert (failing.closes, other.closes) == (1, 1)
    with pytest.raises(ValueError, match="closed"):
        next(it)


def test_context_manager_source_is_exited_once_per_iterator_and_not_closed():
    """Spelt enters a context-manager source per iterator (Grain 0.2.18 does not: grain#936)
    and exits it once, whether the iterator ends, is closed (twice) or both; the source's own
    close() is left to its __exit__."""
    source = _ClosableContextSource()
    loader = _loader(spelt, source)
    it = iter(loader)
    assert list(it) == list(range(6))
    it.close()
    it.close()
    assert (source.exits, source.closes) == (1, 0)
    it = iter(loader)
    next(it)
    it.close()
    assert (source.exits, source.closes) == (2, 0)


@pytest.mark.parametrize("g", [spelt.python, grain.python], ids=["spelt", "grain"])
def test_shared_memory_source_survives_closing_an_iterator(g):
    """The reason: InMemoryDataSource.close() empties the source, so calling it from an
    iterator's close() would make the next epoch read nothing."""
    source = g.InMemoryDataSource(elements=list(range(5)))
    try:
        loader = g.DataLoader(
            data_source=source,
            sampler=g.SequentialSampler(5, g.NoSharding()),
            worker_count=0,
        )
        it = iter(loader)
        next(it)
        _close(it)
        assert list(iter(loader)) == [0, 1, 2, 3, 4]
    finally:
        source.close()
        source.unlink()
