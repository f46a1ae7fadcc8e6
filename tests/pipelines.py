"""Shared helpers for the Python API tests.

* ``DATASET_PIPELINES`` / ``LOADER_PIPELINES``: named pipeline builders ``build(g)`` where ``g``
  is the ``grain`` or the ``spelt`` module, so one definition builds the same pipeline with
  both libraries. The checkpoint tests rebuild them in a fresh interpreter (``child_main``).
* ``describe``: a type-exact description of an output (container types, dtypes, shapes), for
  comparisons stricter than ``numpy.testing.assert_equal``.
* ``timeout``: an autouse fixture (import it into a test module) that fails a test running
  longer than ``TEST_TIMEOUT_S`` (SIGALRM) and, as a backstop for a hang inside native code
  that never returns to the interpreter, kills the process with a traceback dump.
"""

from __future__ import annotations

import collections
import faulthandler
import functools
import importlib
import itertools
import json
import os
import pickle
import signal
import subprocess
import threading
import sys
from typing import Any, Callable

import numpy as np
import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
TEST_TIMEOUT_S = 60


@pytest.fixture(autouse=True)
def timeout():
    def on_alarm(signum, frame):
        del signum, frame
        raise TimeoutError(f"test ran longer than {TEST_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_TIMEOUT_S)
    faulthandler.dump_traceback_later(TEST_TIMEOUT_S + 30, exit=True)
    try:
        yield
    finally:
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------
# Exact comparison.

NT = collections.namedtuple("NT", ["a", "b"])


def describe(x: Any) -> Any:
    """A structure that is equal for two values only if types, dtypes, shapes and data are."""
    if isinstance(x, dict):
        return (type(x).__name__, sorted((k, describe(v)) for k, v in x.items()))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, tuple(x._fields), [describe(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [describe(v) for v in x])
    if isinstance(x, np.ndarray):
        data = x.tolist() if x.dtype != object else [describe(v) for v in x.ravel()]
        return ("ndarray", x.dtype.str if x.dtype.kind not in "SU" else x.dtype.kind, x.shape, data)
    if isinstance(x, np.generic):
        return ("np." + type(x).__name__, x.item())
    if isinstance(x, float) and np.isnan(x):
        return ("float", "nan")
    return (type(x).__name__, x)


def assert_same(a: Any, b: Any) -> None:
    np.testing.assert_equal(a, b)
    assert describe(a) == describe(b)


def both(build: Callable[[Any], Any]) -> tuple[Any, Any]:
    """(build(grain), build(spelt))."""
    import grain  # pylint: disable=import-outside-toplevel
    import spelt  # pylint: disable=import-outside-toplevel

    return build(grain), build(spelt)


def take(iterable, n: int | None) -> list[Any]:
    return list(iterable) if n is None else list(itertools.islice(iterable, n))


def assert_same_run(build: Callable[[Any], Any], *, grain_restores_at_end: bool = True) -> list:
    """build(grain) and build(spelt) give the same outputs and the same state after every
    element; each state restores in a fresh iterator of both libraries (at the end of the
    stream only Spelt's unless grain_restores_at_end) and Spelt's passes
    assert_equal_output_after_checkpoint. Returns the outputs."""
    import spelt  # pylint: disable=import-outside-toplevel

    g_ds, s_ds = both(build)
    g_out, g_states = run_with_states(iter(g_ds), None)
    s_out, s_states = run_with_states(iter(s_ds), None)
    assert_same(s_out, g_out)
    assert s_states == g_states
    for k, state in enumerate(s_states):
        for ds in (s_ds, g_ds) if k < len(s_out) or grain_restores_at_end else (s_ds,):
            it = iter(ds)
            it.set_state(state)
            assert_same(list(it), s_out[k:])
    spelt.experimental.assert_equal_output_after_checkpoint(s_ds)
    return s_out


def assert_same_with_workers(build: Callable[[Any, int], Any], num_workers: int, positions) -> None:
    """build(spelt, num_workers) gives build(grain, 0)'s outputs, and its states after k elements
    (k in positions; -1: the end) restore to the rest."""
    import grain  # pylint: disable=import-outside-toplevel
    import spelt  # pylint: disable=import-outside-toplevel

    want = list(build(grain, 0))
    s_ds = build(spelt, num_workers)
    out, states = run_with_states(iter(s_ds), None)
    assert_same(out, want)
    for k in positions:
        it = iter(s_ds)
        it.set_state(states[k])
        assert_same(list(it), want[k:] if k >= 0 else [])


# ---------------------------------------------------------------------------------------------
# User classes, one set per library (each subclasses that library's base classes).


@functools.cache
def user_classes(g: Any) -> Any:
    """Custom transforms and datasets written against library ``g``'s base classes."""

    class Triple(g.transforms.Map):
        def map(self, x):
            return x * 3

    class Even(g.transforms.Filter):
        def filter(self, x):
            return x % 2 == 0

    class Noise(g.transforms.RandomMap):
        def random_map(self, x, rng):
            return x + int(rng.integers(0, 1000)) * 1000

    class Tag(g.transforms.MapWithIndex):
        def map_with_index(self, index, x):
            return (index, x)

    class Split(g.experimental.FlatMapTransform):
        max_fan_out = 3

        def flat_map(self, x):
            x = int(x)
            return [x * 10 + j for j in range(x % 4 if x % 4 < 3 else 3)]

    class Squares(g.MapDataset):
        """Custom MapDataset: element i is (i % n)**2, plus 1000 per epoch."""

        def __init__(self, n):
            super().__init__()
            self._n = n

        def __len__(self):
            return self._n

        def __getitem__(self, index):
            if isinstance(index, slice):
                return self.slice(index)
            epoch, i = divmod(index, self._n)
            return i * i + 1000 * epoch

    class CountIterator(g.DatasetIterator):
        """Custom DatasetIterator over 7, 14, ..., 7 * n with state {"pos": k}."""

        def __init__(self, n):
            super().__init__()
            self._n = n
            self._pos = 0

        def __next__(self):
            if self._pos >= self._n:
                raise StopIteration
            self._pos += 1
            return 7 * self._pos

        def get_state(self):
            return {"pos": self._pos}

        def set_state(self, state):
            self._pos = state["pos"]

    class Counts(g.IterDataset):
        def __init__(self, n):
            super().__init__()
            self._n = n

        def __iter__(self):
            return CountIterator(self._n)

    class ForgetfulIterator(CountIterator):
        """Broken on purpose: set_state ignores the state."""

        def set_state(self, state):
            del state

    class Forgetful(g.IterDataset):
        def __init__(self, n):
            super().__init__()
            self._n = n

        def __iter__(self):
            return ForgetfulIterator(self._n)

    class OffByOneIterator(CountIterator):
        """Broken on purpose: restores one element too far."""

        def set_state(self, state):
            self._pos = min(state["pos"] + 1, self._n)

    class OffByOne(g.IterDataset):
        def __init__(self, n):
            super().__init__()
            self._n = n

        def __iter__(self):
            return OffByOneIterator(self._n)

    return collections.namedtuple("UserClasses", list(locals()))(**locals())


def _records(n):
    return [{"id": i, "text": f"r{i}", "v": np.arange(3, dtype=np.float32) + i} for i in range(n)]


def _noise(x, rng):
    return x * 1000 + int(rng.integers(0, 1000))


# ---------------------------------------------------------------------------------------------
# Dataset pipelines: build(g) -> IterDataset (or MapDataset). (limit: elements read; None: all.)


def _d(build, limit=None, grain_equal=True, grain_state_equal=True):
    return {
        "build": build,
        "limit": limit,
        "grain_equal": grain_equal,
        "grain_state_equal": grain_state_equal,
    }


DATASET_PIPELINES: dict[str, dict[str, Any]] = {
    "source_list": _d(lambda g: g.MapDataset.source(_records(9)).to_iter_dataset()),
    "source_ndarray": _d(
        lambda g: g.MapDataset.source(np.arange(24).reshape(12, 2)).to_iter_dataset()
    ),
    "range": _d(lambda g: g.MapDataset.range(3, 40, 2).to_iter_dataset()),
    "shuffle": _d(lambda g: g.MapDataset.range(15).seed(1).shuffle().to_iter_dataset()),
    "slice": _d(lambda g: g.MapDataset.range(40)[3:33:2].to_iter_dataset()),
    "repeat_reseed": _d(
        lambda g: g.MapDataset.range(6).seed(2).shuffle().repeat(3).to_iter_dataset()
    ),
    "repeat_no_reseed": _d(
        lambda g: (
            g.MapDataset.range(6)
            .random_map(_noise, seed=3)
            .repeat(3, reseed_each_epoch=False)
            .to_iter_dataset()
        )
    ),
    "repeat_forever": _d(
        lambda g: g.MapDataset.range(5).seed(8).shuffle().repeat().to_iter_dataset(), limit=17
    ),
    "map": _d(lambda g: g.MapDataset.range(12).map(lambda x: x * x).to_iter_dataset()),
    "random_map": _d(lambda g: g.MapDataset.range(12).seed(4).random_map(_noise).to_iter_dataset()),
    "map_with_index": _d(
        lambda g: (
            g.MapDataset.range(12, 0, -1).map_with_index(lambda i, x: (i, x)).to_iter_dataset()
        )
    ),
    "filter": _d(lambda g: g.MapDataset.range(30).filter(lambda x: x % 3 != 1).to_iter_dataset()),
    "filter_allow_nones": _d(
        lambda g: (
            g.MapDataset.range(12).filter(lambda x: x % 3 == 0).to_iter_dataset(allow_nones=True)
        )
    ),
    "map_batch": _d(lambda g: g.MapDataset.source(_records(17)).batch(4).to_iter_dataset()),
    "map_batch_drop_epochs": _d(
        lambda g: g.MapDataset.range(10).batch(3, drop_remainder=True).repeat(2).to_iter_dataset()
    ),
    "native_threads": _d(
        lambda g: (
            g.MapDataset.range(60)
            .seed(5)
            .shuffle()
            .batch(4)
            .to_iter_dataset(g.ReadOptions(num_threads=4, prefetch_buffer_size=7))
        )
    ),
    "iter_map": _d(lambda g: g.MapDataset.range(15).to_iter_dataset().map(lambda x: -x)),
    "iter_filter": _d(
        lambda g: g.MapDataset.range(25).to_iter_dataset().filter(lambda x: x % 4 != 0)
    ),
    "iter_batch": _d(lambda g: g.MapDataset.source(_records(14)).to_iter_dataset().batch(3)),
    "iter_batch_drop": _d(
        lambda g: g.MapDataset.range(14).to_iter_dataset().batch(3, drop_remainder=True)
    ),
    "iter_random_map": _d(
        lambda g: g.MapDataset.range(14).to_iter_dataset().random_map(_noise, seed=11)
    ),
    "iter_map_with_index": _d(
        lambda g: (
            g.MapDataset.range(20)
            .filter(lambda x: x % 3 != 0)
            .to_iter_dataset()
            .map_with_index(lambda i, x: i * 100 + x)
        )
    ),
    "flat_map": _d(
        lambda g: g.experimental.FlatMapIterDataset(
            g.MapDataset.range(14).to_iter_dataset(), user_classes(g).Split()
        )
    ),
    "flat_map_batch": _d(
        lambda g: g.experimental.FlatMapIterDataset(
            g.MapDataset.range(14).seed(3).shuffle().to_iter_dataset(), user_classes(g).Split()
        ).batch(2)
    ),
    "apply_transforms": _d(
        lambda g: (
            g.MapDataset.range(20)
            .seed(6)
            .apply(
                [
                    user_classes(g).Triple(),
                    user_classes(g).Noise(),
                    user_classes(g).Even(),
                ]
            )
            .to_iter_dataset()
            .apply([user_classes(g).Tag(), g.transforms.Batch(3)])
        )
    ),
    "custom_map_dataset": _d(
        lambda g: (
            user_classes(g)
            .Squares(8)
            .seed(2)
            .shuffle()
            .repeat(2)
            .map(lambda x: x + 1)
            .to_iter_dataset()
        )
    ),
    "custom_iter_dataset": _d(
        lambda g: (
            user_classes(g)
            .Counts(13)
            .map(lambda x: x + 1)
            .filter(lambda x: x % 3 != 0)
            .random_map(_noise, seed=5)
            .batch(2)
        )
    ),
    "long_chain": _d(
        lambda g: (
            g.experimental.FlatMapIterDataset(
                g.MapDataset.source(np.arange(40) * 2)[2:31]
                .seed(9)
                .shuffle()
                .repeat(2)
                .random_map(_noise)
                .filter(lambda x: x % 5 != 0)
                .to_iter_dataset()
                .map_with_index(lambda i, x: x + i)
                .random_map(lambda x, rng: x % 97 + int(rng.integers(0, 2))),
                user_classes(g).Split(),
            )
            .map(lambda x: x // 2)
            .batch(3)
        )
    ),
    # grain.experimental stream combinators (engine ops: limit, iter_repeat, zip, iter_mix).
    "limit": _d(
        lambda g: g.experimental.LimitIterDataset(
            g.MapDataset.range(30).filter(lambda x: x % 4 != 1).to_iter_dataset(), 9
        )
    ),
    "repeat_iter": _d(
        lambda g: g.experimental.RepeatIterDataset(
            g.MapDataset.range(7).seed(3).shuffle().to_iter_dataset().batch(3), 3
        )
    ),
    "zip_map": _d(
        lambda g: g.experimental.ZipMapDataset(
            [g.MapDataset.range(8), g.MapDataset.source(_records(8)).seed(1).shuffle()]
        ).to_iter_dataset()
    ),
    "zip_iter": _d(
        lambda g: g.experimental.ZipIterDataset(
            [
                g.MapDataset.range(9).to_iter_dataset().batch(2),
                g.MapDataset.range(20, 29).map(lambda x: -x).to_iter_dataset().batch(2),
            ]
        )
    ),
    "mix_iter": _d(
        lambda g: g.IterDataset.mix(
            [
                g.MapDataset.range(5).to_iter_dataset(),
                g.MapDataset.range(100, 120).to_iter_dataset(),
            ],
            [0.3, 0.7],
        )
    ),
    "mix_iter_keyed": _d(
        lambda g: g.IterDataset.mix(
            {
                "b": g.MapDataset.range(10).seed(5).shuffle().to_iter_dataset(),
                "a": g.MapDataset.range(50, 60).to_iter_dataset().map(lambda x: x * 2),
            },
            {"b": 1, "a": 2},
        )
    ),
    # grain.experimental interleave, thread prefetch and cache (engine ops: interleave,
    # thread_prefetch, cache).
    "interleave": _d(
        lambda g: g.experimental.InterleaveIterDataset(
            [
                g.MapDataset.range(i * 10, i * 10 + 2 + 2 * i).to_iter_dataset().map(lambda x: -x)
                for i in range(5)
            ],
            cycle_length=3,
        )
    ),
    "interleave_lazy": _d(
        lambda g: g.experimental.InterleaveIterDataset(
            g.MapDataset.range(4).map(lambda i: g.MapDataset.range(i * 7, i * 7 + 3 + i)),
            cycle_length=2,
            iter_buffer_size=0,
        ).batch(2)
    ),
    "thread_prefetch": _d(
        lambda g: g.experimental.ThreadPrefetchIterDataset(
            g.MapDataset.range(13).seed(2).shuffle().to_iter_dataset().filter(lambda x: x % 3),
            prefetch_buffer_size=3,
        ).map(lambda x: x * 2)
    ),
    "multithread_prefetch": _d(
        lambda g: g.experimental.multithread_prefetch(
            g.MapDataset.range(11).map(lambda x: x + 1).to_iter_dataset().batch(2), 3, 2
        )
    ),
    "cache_repeat": _d(
        lambda g: g.experimental.RepeatIterDataset(
            g.experimental.CacheIterDataset(
                g.experimental.LimitIterDataset(g.MapDataset.range(20).to_iter_dataset(), 6)
            ),
            num_epochs=3,
        )
    ),
    "window_shuffle_iter": _d(
        lambda g: g.experimental.WindowShuffleIterDataset(
            g.MapDataset.range(23).to_iter_dataset().map(lambda x: x * 3), window_size=5, seed=9
        )
    ),
    "window_shuffle_map": _d(
        lambda g: g.experimental.WindowShuffleMapDataset(
            g.MapDataset.range(24), window_size=6, seed=4
        ).to_iter_dataset()
    ),
    "rebatch": _d(
        lambda g: g.experimental.RebatchIterDataset(
            g.MapDataset.range(17)
            .map(lambda x: {"x": x, "y": float(x)})
            .to_iter_dataset()
            .batch(3),
            batch_size=4,
        )
    ),
    "flat_map_map": _d(
        lambda g: g.experimental.FlatMapMapDataset(
            g.MapDataset.range(9), user_classes(g).Split()
        ).to_iter_dataset()
    ),
    "batch_and_pad": _d(
        lambda g: (
            g.MapDataset.range(10)
            .to_iter_dataset()
            .batch(4, batch_fn=functools.partial(g.experimental.batch_and_pad, batch_size=4))
        )
    ),
}


# ---------------------------------------------------------------------------------------------
# DataLoader pipelines: build(g) -> DataLoader.


class _WithRemainder:
    """A Grain sampler whose length makes Grain 0.2.18's DataLoader read this shard's share of
    the remainder, as Grain does since grain@5bad1a2 and Spelt does (docs/compatibility.md:
    uneven sharding loses no data)."""

    def __init__(self, sampler, length):
        self._sampler, self._length = sampler, length

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        return self._sampler[index]

    def __getattr__(self, name):
        return getattr(self._sampler, name)

    def __repr__(self):
        return repr(self._sampler)


def _grain_reads_remainder(s, so):
    """`s` for Grain's DataLoader: wrapped when its shard `so` should read one more index."""
    length = len(s)
    count = so.shard_count
    if so.drop_remainder or length == sys.maxsize or so.shard_index >= length % count:
        return s
    return _WithRemainder(s, (length // count + 1) * count)


def _loader(
    g, *, n=23, sampler="index", shard=None, ops=(), worker_count=0, source=None, **sampler_kw
):
    so = g.sharding.NoSharding() if shard is None else g.sharding.ShardOptions(*shard)
    if sampler == "index":
        s = g.samplers.IndexSampler(n, shard_options=so, **sampler_kw)
    else:
        s = g.samplers.SequentialSampler(n, shard_options=so, **sampler_kw)
    if g.__name__ == "grain":
        s = _grain_reads_remainder(s, so)
    u = user_classes(g)
    operations = []
    for op in ops:
        if op == "map":
            operations.append(u.Triple())
        elif op == "filter":
            operations.append(u.Even())
        elif op == "random_map":
            operations.append(u.Noise())
        elif op == "flat_map":
            operations.append(u.Split())
        elif op == "map_with_index":
            operations.append(u.Tag())
        elif op.startswith("batch"):
            size = int(op[5:].rstrip("d"))
            operations.append(g.transforms.Batch(size, drop_remainder=op.endswith("d")))
        else:
            raise ValueError(op)
    return g.DataLoader(
        data_source=list(range(n)) if source is None else source,
        sampler=s,
        operations=operations,
        worker_count=worker_count,
    )


def _l(build, limit=None, grain_equal=True, grain_state_equal=True):
    return {
        "build": build,
        "limit": limit,
        "grain_equal": grain_equal,
        "grain_state_equal": grain_state_equal,
    }


LOADER_PIPELINES: dict[str, dict[str, Any]] = {
    "plain": _l(lambda g: _loader(g, num_epochs=1)),
    "shuffle_epochs_ops": _l(
        lambda g: _loader(
            g, shuffle=True, num_epochs=2, seed=5, ops=("map", "random_map", "filter", "batch3")
        )
    ),
    "sharded": _l(
        lambda g: _loader(
            g, shuffle=True, num_epochs=2, seed=1, shard=(1, 3), ops=("random_map", "batch2")
        )
    ),
    "sharded_drop": _l(
        lambda g: _loader(
            g, shuffle=True, num_epochs=2, seed=1, shard=(2, 3, True), ops=("batch2d",)
        )
    ),
    "sequential": _l(lambda g: _loader(g, sampler="sequential", ops=("map", "batch4"))),
    "sequential_sharded_seeded": _l(
        lambda g: _loader(
            g, sampler="sequential", shard=(0, 2), seed=3, ops=("random_map", "filter")
        )
    ),
    "two_random_maps": _l(
        lambda g: _loader(
            g,
            shuffle=True,
            num_epochs=2,
            seed=8,
            ops=("random_map", "filter", "random_map", "batch3"),
        )
    ),
    "infinite": _l(lambda g: _loader(g, n=7, shuffle=True, seed=2, ops=("batch3",)), limit=12),
    "load": _l(
        lambda g: g.load(
            list(range(11)),
            num_epochs=2,
            shuffle=True,
            seed=4,
            transformations=[user_classes(g).Noise()],
            batch_size=3,
            drop_remainder=True,
        )
    ),
    "ndarray_source": _l(
        lambda g: _loader(g, n=9, num_epochs=2, source=np.arange(9) * 2, ops=("batch2",))
    ),
    # Grain 0.2.18 writes the raw dataset state for FlatMap loaders (compared separately).
    "flat_map": _l(
        lambda g: _loader(g, n=12, shuffle=True, num_epochs=1, seed=3, ops=("flat_map", "batch2")),
        grain_state_equal=False,
    ),
    # Spelt-only semantics (docs/compatibility.md): not compared with Grain.
    "map_with_index": _l(
        lambda g: _loader(
            g,
            n=10,
            num_epochs=1,
            shuffle=True,
            seed=3,
            shard=(1, 2),
            ops=("map_with_index", "batch2"),
        ),
        grain_equal=False,
        grain_state_equal=False,
    ),
    "random_map_after_batch": _l(
        lambda g: _loader(g, n=10, num_epochs=1, seed=3, ops=("batch3", "random_map")),
        grain_equal=False,
        grain_state_equal=False,
    ),
    "two_workers": _l(
        lambda g: _loader(
            g, shuffle=True, num_epochs=1, seed=7, ops=("filter", "batch2"), worker_count=2
        ),
        grain_equal=False,
        grain_state_equal=False,
    ),
    "legacy_operations": _l(lambda g: _legacy_loader(g)),
}


def _is_odd(x):
    return x % 2 == 1


def _legacy_loader(g):
    """A DataLoader of Grain's legacy *Operation classes, mixed with a transformation."""
    legacy = importlib.import_module(g.__name__ + ".python")
    operations = [
        user_classes(g).Triple(),
        legacy.MapOperation(map_function=abs),
        legacy.FilterOperation(condition_function=_is_odd),
        legacy.RandomMapOperation(random_map_function=_noise),
        legacy.BatchOperation(batch_size=2),
    ]
    return g.DataLoader(
        data_source=list(range(16)),
        sampler=g.samplers.IndexSampler(16, shuffle=True, num_epochs=1, seed=6),
        operations=operations,
        shard_options=g.sharding.NoSharding(),
    )


# ---------------------------------------------------------------------------------------------
# Checkpoint runs.


def drain_in_threads(it, count: int = 4) -> list[list]:
    """Reads iterator `it` to its end from `count` threads at once; what each thread got."""
    seen: list[list] = [[] for _ in range(count)]
    threads = [threading.Thread(target=lambda out=out: out.extend(it)) for out in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return seen


def run_with_states(it, limit: int | None):
    """Reads it to the end (or limit elements); returns (outputs, states) with states[k] the
    state after k elements (len(states) == len(outputs) + 1)."""
    outputs, states = [], [it.get_state()]
    while limit is None or len(outputs) < limit:
        try:
            outputs.append(next(it))
        except StopIteration:
            break
        states.append(it.get_state())
    return outputs, states


def _encode_state(state):
    return state.decode() if isinstance(state, bytes) else state


def _decode_state(kind, state):
    return state.encode() if kind == "loader" else state


def child_main(in_path: str, out_path: str) -> None:
    """Runs in a fresh interpreter: restores each saved state and reads the remainder."""
    import spelt  # pylint: disable=import-outside-toplevel

    with open(in_path) as f:
        request = json.load(f)
    results = {}
    for item in request:
        kind, name = item["kind"], item["name"]
        spec = (DATASET_PIPELINES if kind == "dataset" else LOADER_PIPELINES)[name]
        limit = spec["limit"]
        runs = []
        try:
            for k, state in item["states"]:
                it = iter(spec["build"](spelt))
                it.set_state(_decode_state(kind, state))
                restored_state = it.get_state()
                rest = take(it, None if limit is None else limit - k)
                runs.append((k, restored_state, rest))
            results[(kind, name)] = ("ok", runs)
        except Exception as e:  # pylint: disable=broad-except
            results[(kind, name)] = ("error", f"{type(e).__name__}: {e}")
    with open(out_path, "wb") as f:
        pickle.dump(results, f)


def restore_in_new_process(requests: list[dict[str, Any]], tmp_dir: str) -> dict[Any, Any]:
    """requests: [{"kind", "name", "states": [(k, state), ...]}]; one child for all of them."""
    in_path = os.path.join(tmp_dir, "request.json")
    out_path = os.path.join(tmp_dir, "result.pkl")
    with open(in_path, "w") as f:
        json.dump(
            [dict(r, states=[(k, _encode_state(s)) for k, s in r["states"]]) for r in requests], f
        )
    code = (  # jax blocked as in this process (tests/conftest.py): the same tree semantics
        f"import sys; sys.modules.setdefault('jax', None); sys.path.insert(0, {TESTS_DIR!r}); "
        f"import pipelines; pipelines.child_main({in_path!r}, {out_path!r})"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out_path, "rb") as f:
        return pickle.load(f)


def run_json_script(*args: Any) -> Any:
    """Runs ``python *args`` on JAX's CPU platform (Orbax steps: each in a fresh process) and
    returns the JSON of the last line it printed; fails the test with its stderr otherwise."""
    result = subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
