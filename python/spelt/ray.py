"""Ray actors as a third executor of the ordered core: ``RayOptions`` and the stage it makes.

``ds.mp_prefetch(RayOptions(num_actors=4))`` and ``DataLoader(..., worker_backend=RayOptions(...))``
compute the MapDataset part of a pipeline (below ``to_iter_dataset``; in a DataLoader, the
operations before the first Batch) in chunks of consecutive indices on Ray actors anywhere in a
Ray cluster; the consumer merges them in index order in the engine, so the output and
``get_state()`` are those of the pipeline without workers, for any number of actors, and a
checkpoint restores with local workers and the reverse. See docs/distributed.md.

Ray is optional (``pip install spelt-ml[ray]``): it is imported when a RayOptions stage is iterated,
never by ``import spelt``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from spelt import _core
from spelt import options as options_lib
from spelt.transformations import prefetch as prefetch_lib

__all__ = ["RayOptions", "RayPrefetchIterDataset", "stop_actors"]


@dataclasses.dataclass(slots=True, frozen=True)
class RayOptions:
    """Where and how Ray actors compute a pipeline's per-index part.

    Args:
        num_actors: int, default 2; actors computing chunks (Grain's ``num_workers``).
        address: str or None; the Ray cluster, as ``ray.init(address=...)`` takes it ("auto",
            "ray://host:10001", ...). Used only if this process is not connected to Ray yet;
            None starts a local cluster unless one is running.
        namespace: str, default "spelt"; the Ray namespace of named actors (and of this
            process's connection, if Spelt connects it).
        actor_name: str or None; if set, the actors are named ``f"{actor_name}-{i}"`` and
            detached: a restarted trainer reattaches to them, several trainers share them, and
            they run until ``stop_actors(actor_name, num_actors)`` or the cluster stops. None:
            the actors belong to the dataset and end with it.
        num_cpus_per_actor: float, default 1; Ray's ``num_cpus`` of each actor.
        resources_per_actor: dict[str, float] or None; Ray's ``resources`` of each actor (custom
            resources, e.g. ``{"preprocess": 1}`` to place actors on nodes that have them).
        scheduling_strategy: str, default "SPREAD"; Ray's actor scheduling strategy ("SPREAD"
            puts actors on as many nodes as it can; "DEFAULT" packs them).
        runtime_env: dict or None; Ray's ``runtime_env`` of the actors (e.g. ``{"pip":
            ["spelt"]}`` on a cluster whose nodes lack Spelt).
        per_actor_buffer_size: int, default 1; chunks each actor may hold ready beyond the one
            it computes (Grain's ``per_worker_buffer_size``).
        timeout_s: float, default 120; the longest ``next()`` waits for one chunk (actor start
            included) before raising TimeoutError. The iterator keeps its position.
        max_chunk_retries: int, default 3; how many times a chunk whose actor died (``ray.kill``,
            a node lost) is submitted again, to another actor, before RuntimeError.

    Raises ValueError (at construction) for counts or times out of range. Spelt's: Grain has no
    Ray executor; the names follow Grain's MultiprocessingOptions (grain/_src/python/options.py)
    and Ray's actor options. Immutable, so safe to share between threads.
    """

    num_actors: int = 2
    address: str | None = None
    namespace: str = "spelt"
    actor_name: str | None = None
    num_cpus_per_actor: float = 1.0
    resources_per_actor: dict[str, float] | None = None
    scheduling_strategy: str = "SPREAD"
    runtime_env: dict[str, Any] | None = None
    per_actor_buffer_size: int = 1
    timeout_s: float = 120.0
    max_chunk_retries: int = 3

    def __post_init__(self):
        for name in ("num_actors", "per_actor_buffer_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"RayOptions.{name} must be >= 1, got {getattr(self, name)}")
        if self.num_cpus_per_actor < 0 or self.max_chunk_retries < 0:
            raise ValueError("RayOptions: num_cpus_per_actor and max_chunk_retries must be >= 0")
        if not self.timeout_s > 0:
            raise ValueError(f"RayOptions.timeout_s must be > 0, got {self.timeout_s}")


class RayPrefetchIterDataset(prefetch_lib.PrefetchIterDataset):
    """``parent.to_iter_dataset()`` with the elements computed by Ray actors.

    Its engine node is the ordered core with the process executor talking to Ray actors
    (spelt/_workers/ray_pool.py): same merge, same state ``{"next_index": n}`` as
    ``to_iter_dataset``. Elements handed out unbatched may hold read-only numpy arrays (views
    of what Ray received; batches are new arrays). Thread-safety: as every iterator (calls
    from several threads are serialised by DatasetIterator).
    """

    def __init__(
        self,
        parent: Any,
        read_options: options_lib.ReadOptions,
        allow_nones: bool,
        options: RayOptions,
    ):
        super().__init__(parent, read_options, allow_nones)
        self.options = options

    def _make_node(self):
        from spelt._workers import ray_pool  # pylint: disable=import-outside-toplevel

        parent, options = self._parents[0], self.options
        return _core.process_prefetch(
            parent.engine_node,
            ray_pool.RayKeeper(parent, options),
            self.allow_nones,
            options.num_actors,
            options.per_actor_buffer_size,
            target_chunk_seconds=ray_pool.TARGET_CHUNK_SECONDS,
        )

    def __str__(self) -> str:
        return f"RayPrefetchIterDataset({self.options})"


def prefetch(ds: Any, options: RayOptions) -> Any:
    """`ds` with each to_iter_dataset stage computed by Ray actors (IterDataset.mp_prefetch)."""
    return prefetch_lib.replace_stages(
        ds,
        lambda stage: RayPrefetchIterDataset(
            stage.parents[0], stage.read_options, stage.allow_nones, options
        ),
    )


def stop_actors(actor_name: str, num_actors: int, namespace: str = "spelt") -> int:
    """Kills the named actors ``f"{actor_name}-{i}"``, i < num_actors, that are running (see
    RayOptions.actor_name); returns how many. Requires a connection to Ray."""
    import ray  # pylint: disable=import-outside-toplevel

    stopped = 0
    for i in range(num_actors):
        try:
            actor = ray.get_actor(f"{actor_name}-{i}", namespace=namespace)
        except ValueError:
            continue
        ray.kill(actor)
        stopped += 1
    return stopped
