"""Pipelines and helpers for tests/test_workers.py.

Kept apart from the test module so that worker processes, which import the functions below by
reference, import only this light module (not pytest and the test suite).
"""

from __future__ import annotations

import collections
import json
import os
import sys
import threading
import time

import numpy as np

import spelt


class TransformError(Exception):
    """Raised by `explode` (its type must survive the trip from a worker)."""


def record(i):
    """A dict with a small and a large (out-of-band) array, and a string."""
    return {
        "id": i,
        "small": np.arange(3, dtype=np.int16) + i,
        "image": np.full((48, 48), i % 251, dtype=np.float32),
        "name": f"r{i}",
    }


def keep_two_of_three(x):
    return x["id"] % 3 != 1


def keep_one_in_ten(x):
    return x["id"] % 10 == 3


def keep_all(x):
    del x
    return True


def jitter(x, rng):
    x["noise"] = rng.integers(0, 1000)
    return x


def add_noise(x, rng):
    return x + int(rng.integers(0, 1000))


def split(batch):
    """flat_map: one element per remainder of the batch's ids mod 3 (0 to 3 elements)."""
    ids = batch["id"]
    return [
        {
            "r": r,
            "ids": int(ids[ids % 3 == r].sum()),
            "noise": batch["noise"][ids % 3 == r],
            "pixels": batch["image"][ids % 3 == r].sum(),
        }
        for r in range(3)
        if (ids % 3 == r).any()
    ]


# name -> (keep, then): pipelines that filter out different fractions, with batch
# drop_remainder, flat_map and stream-level random_map after to_iter_dataset.
FILTERS = {"two_of_three": keep_two_of_three, "one_in_ten": keep_one_in_ten, "all": keep_all}


def pipeline(
    name: str, num_workers: int, length: int = 400, slow_records: bool = False, **mp_prefetch_kwargs
):
    """A pipeline with filters, batches, a flat_map and random maps (`slow_records`: 2 ms per
    record), with `num_workers` workers (mp_prefetch_kwargs: autotune=...)."""
    ds = spelt.MapDataset.range(length).seed(7).shuffle()
    if slow_records:
        ds = ds.map(slow)
    ds = (
        ds.map(record)
        .random_map(jitter)
        .filter(FILTERS[name])
        .to_iter_dataset()
        .batch(5, drop_remainder=True)
    )
    ds = spelt.experimental.FlatMapIterDataset(ds, split).random_map(jitter)
    ds = ds.batch(3, drop_remainder=True)
    if num_workers:
        options = spelt.MultiprocessingOptions(num_workers=num_workers)
        ds = ds.mp_prefetch(options, **mp_prefetch_kwargs)
    return ds


def keep_id_not_multiple_of_five(x):
    return x["id"] % 5 != 0


def filtered_batches(num_workers: int):
    """A filter on each side of to_iter_dataset, and a batch on top."""
    ds = (
        spelt.MapDataset.range(300)
        .seed(5)
        .shuffle()
        .map(record)
        .filter(keep_two_of_three)
        .to_iter_dataset()
        .filter(keep_id_not_multiple_of_five)
        .batch(7)
    )
    if num_workers:
        ds = ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=num_workers))
    return ds


class Scale:
    """A transform with a setting that can change between two iterators."""

    def __init__(self, factor: int):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor


Point = collections.namedtuple("Point", ["x", "label"])


def mixed(i):
    """Elements of every kind: native ones (plain containers, numbers, strings, C-order arrays and
    numpy scalars of Spelt dtypes) and ones that travel pickled (a namedtuple, Fortran order,
    an int beyond int64)."""
    kinds = [
        {
            "i": i,
            "f": i / 2,
            "s": f"\u00e9{i}",
            "b": bytes([i % 256]),
            "t": True,
            "n": None,
            "l": [i, (i, "x")],
            "d": {"z": -i},
        },
        {
            "a": np.arange(i % 5, dtype=np.int16),
            "big": np.full((64, 64), i, np.float64),
            "zero_d": np.array(i),
            "empty": np.zeros((0, 3), np.uint8),
        },
        Point(np.full((48, 48), i, np.float32), np.int32(i)),
        np.asfortranarray(np.full((50, 60), i, np.float32)),
        {
            "label": np.int64(i),
            "w": np.float32(i / 4),
            "ok": np.bool_(i % 2),
            "x": np.full(3000, i, np.int32),
        },
        [np.float16(i), np.uint8(i % 256), np.array([i], np.float16)],
        2**70 + i,
        "x" * (i % 3),
    ]
    return kinds[i % len(kinds)]


def loader(num_workers: int, **kwargs):
    ops = [spelt.transforms.Batch(4, drop_remainder=True)]
    return spelt.DataLoader(
        data_source=[record(i) for i in range(150)],
        sampler=spelt.samplers.IndexSampler(
            150, shuffle=True, seed=3, num_epochs=2, shard_options=spelt.sharding.NoSharding()
        ),
        operations=[_LoaderFilter(), *ops],
        worker_count=num_workers,
        **kwargs,
    )


class _LoaderFilter(spelt.transforms.Filter):
    def filter(self, element):
        return element["id"] % 4 != 2


def explode(x):
    if x == 7:
        raise TransformError(f"cannot handle {x}")
    return x


def big_array(i):
    """256 KiB, out of band."""
    return np.full((256, 256), i, dtype=np.float32)


def big_array_mib(i):
    """2 MiB, out of band."""
    return np.full((512, 1024), i, dtype=np.float32)


def lock_at_three(x):
    return threading.Lock() if x == 3 else x


def failing_init(index, count):
    raise TransformError(f"no accelerator for worker {index} of {count}")


def slow(x):
    time.sleep(0.002)
    return x


def write_init_marker(directory):
    """A worker_init_fn that records (index, count, pid) in `directory`."""

    def init(index, count):
        path = os.path.join(directory, f"init-{index}")
        with open(path + ".tmp", "w") as f:
            json.dump([index, count, os.getpid()], f)
        os.rename(path + ".tmp", path)  # whole, for a reader that polls

    return init


def children(pid: int) -> list[int]:
    """Live (non-zombie) child processes of `pid`, from /proc, other than multiprocessing's
    resource tracker (which Grain's shared memory and workers start, and which lives as long
    as the process that started it)."""
    from multiprocessing import resource_tracker  # pylint: disable=import-outside-toplevel

    tracker = getattr(resource_tracker._resource_tracker, "_pid", None)  # pylint: disable=protected-access
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == pid and int(entry) != tracker:
            out.append(int(entry))
    return out


def is_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def restore_main() -> None:
    """Child process for test_workers: restores pipelines from saved states.

    stdin: JSON [{"kind": "pipeline" | "loader", "name", "workers", "states": [[k, state]],
    "limit", optional "kwargs": {...} for pipeline() or loader()}]; stdout: JSON [[k,
    [describe(element), ...]], ...] per request.
    """
    import pipelines  # pylint: disable=import-outside-toplevel

    results = []
    for request in json.load(sys.stdin):
        kwargs = request.get("kwargs", {})
        if request["kind"] == "pipeline":
            it = iter(pipeline(request["name"], request["workers"], **kwargs))
        else:
            it = iter(loader(request["workers"], **kwargs))
        runs = []
        for k, state in request["states"]:  # one iterator, restored again and again
            it.set_state(state.encode() if request["kind"] == "loader" else state)
            rest = [pipelines.describe(x) for x in pipelines.take(it, request["limit"] - k)]
            runs.append([k, rest])
        it.close()
        results.append(runs)
    json.dump(results, sys.stdout, default=repr)


class SlowMap(spelt.transforms.Map):
    """``slow`` as a DataLoader operation."""

    def map(self, element):
        return slow(element)


def none_at_sevens(x):
    """A map that returns None (an element to_iter_dataset skips) where x % 7 == 3."""
    return None if x % 7 == 3 else x


def fail_at_23(x):
    if x == 23:
        raise TransformError("element 23")
    return x


class NoneFrom(spelt.transforms.Map):
    """A DataLoader Map that returns None for records >= `first` (the loader yields them)."""

    def __init__(self, first: int):
        self.first = first

    def map(self, element):
        return None if element >= self.first else element
