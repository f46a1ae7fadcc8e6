"""Worker processes: the MapDataset part of a pipeline computed in parallel processes.

See docs/workers.md for the design. ``IterDataset.mp_prefetch`` (transformations/prefetch.py) replaces a
pipeline's ``to_iter_dataset`` stages by ProcessPrefetchIterDatasets, whose engine node is the
ordered core with a worker-process executor (cpp/python/process_executor.cc). This package is
what that executor talks to, once per chunk; it knows nothing of datasets. Modules, one concept
each:

* keeper.py: the pool of one parallel stage, leased to its iterators and kept warm in between;
* autotune.py: a keeper whose leases adapt the pool's worker count and buffers while running
  (``mp_prefetch(..., autotune=True)``);
* pool.py: the worker processes of a pool (start, chunks sent and received, failures, shutdown);
* launcher.py: starting one worker process (a fresh interpreter);
* bootstrap.py: the worker's first code (waiting for its turn to start);
* worker.py: the worker's main loop;
* protocol.py: messages, and the serialization of a chunk (pickle 5, buffers in the arena);
* arena.py: shared-memory arenas (memfd; mapped and allocated by ``_core.Arena``);
* pickling.py: pickling the pipeline, with errors that name what cannot be pickled;
* ray_pool.py: Ray actors behind the keeper interface (``spelt.ray.RayOptions``; it imports Ray,
  so only spelt.ray imports it, when a Ray stage is built).
"""
