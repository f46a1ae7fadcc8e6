"""Who calls a data source's ``close()`` (docs/compatibility.md: a DataLoader enters a data
source that is a context manager).

Grain 0.2.18 (and Grain's main branch when this was written) never calls a data source's own
``close()``: its documentation says a source that is not a context manager "will be used
as-is", and nothing in its DataLoader, its ``MapDataset.source`` or its iterators' ``close()``
reaches the source (grain PR #1185, which would call it from ``DatasetIterator.close()``, is
not merged). Spelt does the same, compared with Grain here: closing an iterator must leave the
source readable by the next one (a SharedMemoryDataSource's ``close()`` empties it).
"""

import gc

import grain
import grain.python
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
    """Partial read then close(), a full pass, an abandoned iterator collected; then a new
    iterator must still read everything."""
    loader = _loader(g, source)
    it = iter(loader)
    next(it)
    _close(it)
    assert list(iter(loader)) == list(range(len(source)))
    abandoned = iter(loader)
    next(abandoned)
    del abandoned
    gc.collect()
    return list(iter(loader))


@pytest.mark.parametrize("g", [spelt, grain], ids=["spelt", "grain"])
def test_data_loader_never_closes_a_plain_source(g):
    source = _ClosableSource()
    assert _exercise_loader(g, source) == list(range(6))
    assert source.closes == 0


@pytest.mark.parametrize("g", [spelt, grain], ids=["spelt", "grain"])
def test_dataset_iterators_never_close_the_source(g):
    source = _ClosableSource()
    ds = g.MapDataset.source(source)
    for read_options in (g.ReadOptions(num_threads=0), g.ReadOptions(num_threads=4)):
        it = iter(ds.map(lambda x: x + 1).to_iter_dataset(read_options).batch(2))
        next(it)
        it.close()
        it.close()
    assert list(ds.to_iter_dataset()) == list(range(6))
    assert source.closes == 0


def test_worker_processes_leave_the_consumers_source_open():
    source = _ClosableSource()
    it = iter(_loader(spelt, source, worker_count=2))
    assert list(it) == list(range(6))
    it.close()
    assert source.closes == 0


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
