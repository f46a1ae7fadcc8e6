"""Pipelines for the Ray tests (tests/distributed), and a trainer run as a separate process.

The test modules register this module to be pickled by value (cloudpickle), so that Ray actors,
which do not have tests/ on their sys.path, receive its functions with the pipeline.

As a script: ``python ray_pipelines.py ADDRESS SPEC_JSON OUT_FILE`` is one trainer: it connects
to the Ray cluster at ADDRESS, builds ``loader(**spec["loader"])`` with named actors, optionally
restores spec["state"], reads spec["batches"] batches (all if None), and pickles to OUT_FILE
{"batches", "states", "actors"}; with spec["kill_self"] it then SIGKILLs itself (a trainer
that dies without any cleanup).
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import time

import cloudpickle
import numpy as np

import spelt


def record(i):
    return {"id": i, "image": np.full((16, 16), i % 251, dtype=np.float32), "name": f"r{i}"}


def keep_two_of_three(x):
    return x["id"] % 3 != 1


def jitter(x, rng):
    x["noise"] = rng.integers(0, 1000)
    return x


def slow(x):
    """About 2 ms of work per element: gives time to kill an actor mid-run."""
    time.sleep(0.002)
    return x


class Stall:
    """The identity, but `value` takes `seconds`."""

    def __init__(self, value: int, seconds: float):
        self.value, self.seconds = value, seconds

    def __call__(self, i):
        if i == self.value:
            time.sleep(self.seconds)
        return i


def dataset(backend=None, length=300, transform=None, batch=True):
    """A shuffled MapDataset part with maps (`transform` of the index first, if given), a
    random_map and a filter, batched above to_iter_dataset (if `batch`); computed by `backend`
    (RayOptions or MultiprocessingOptions) if given."""
    ds = spelt.MapDataset.range(length).seed(7).shuffle()
    if transform is not None:
        ds = ds.map(transform)
    ds = ds.map(record).random_map(jitter).filter(keep_two_of_three).to_iter_dataset()
    if batch:
        ds = ds.batch(6)
    return ds if backend is None else ds.mp_prefetch(backend)


class LoaderFilter(spelt.transforms.Filter):
    def filter(self, element):
        return element["id"] % 4 != 2


class LoaderJitter(spelt.transforms.RandomMap):
    def random_map(self, element, rng):
        # A new dict: the source's records are shared by both epochs.
        return jitter(dict(element), rng)


def loader(backend=None, shard_index=0, shard_count=1, num_epochs=2):
    """A DataLoader over 120 records (a filter and a random map before Batch); `backend` a
    RayOptions (worker_backend) or None (worker_count=0)."""
    return spelt.DataLoader(
        data_source=[record(i) for i in range(120)],
        sampler=spelt.samplers.IndexSampler(
            120,
            shuffle=True,
            seed=3,
            num_epochs=num_epochs,
            shard_options=spelt.sharding.ShardOptions(shard_index, shard_count),
        ),
        operations=[LoaderFilter(), LoaderJitter(), spelt.transforms.Batch(4)],
        worker_backend=backend,
    )


def read(iterator, count=None):
    """(elements, states after each) of the next `count` elements (all if None)."""
    elements, states = [], []
    for element in iterator:
        elements.append(element)
        states.append(iterator.get_state())
        if count is not None and len(elements) == count:
            break
    return elements, states


def assert_same(actual, expected):
    assert len(actual) == len(expected), (len(actual), len(expected))
    for k, (a, e) in enumerate(zip(actual, expected)):
        try:
            np.testing.assert_equal(a, e)
        except AssertionError as error:
            raise AssertionError(f"element {k} differs") from error


def actor_locations(options) -> list:
    """[(node id, pid)] of the named actors of `options` (a RayOptions with actor_name)."""
    import ray  # pylint: disable=import-outside-toplevel

    return ray.get(
        [
            ray.get_actor(
                f"{options.actor_name}-{i}", namespace=options.namespace
            ).location.remote()
            for i in range(options.num_actors)
        ]
    )


def _trainer(address: str, spec: dict, out_file: str) -> None:
    import ray  # pylint: disable=import-outside-toplevel

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(address=address, namespace="spelt", log_to_driver=False)
    options = spelt.experimental.RayOptions(**spec["options"])
    it = iter(loader(options, **spec["loader"]))
    if spec.get("state") is not None:
        it.set_state(spec["state"].encode())
    batches, states = read(it, spec.get("batches"))
    pids = actor_locations(options)
    with open(out_file, "wb") as f:
        pickle.dump({"batches": batches, "states": states, "actors": pids}, f)
    if spec.get("kill_self"):
        os.kill(os.getpid(), signal.SIGKILL)
    ray.shutdown()


if __name__ == "__main__":
    import ray_pipelines  # the functions by their module's name, as in the test process

    ray_pipelines._trainer(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3])
