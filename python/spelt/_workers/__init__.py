"""Parallel workers: the MapDataset part of a pipeline computed in worker processes.

See docs/workers.md for the design. Modules, one concept each:

* prefetch.py: ``mp_prefetch``, which swaps a pipeline's ``to_iter_dataset`` stages for
  parallel ones, and ProcessPrefetchIterDataset;
* iterator.py: the consumer's iterator (chunk scheduling, in-order merge, state);
* chunk_sizer.py: adaptive chunk sizes;
* pool.py: the worker processes of one iterator (start, requests, failures, shutdown);
* launcher.py: starting one worker process (a fresh interpreter);
* worker.py: the worker's main loop;
* protocol.py: messages and the serialization of results (pickle 5, arrays in the arena);
* arena.py: shared-memory arenas (memfd) and the worker's allocator;
* pickling.py: pickling the pipeline, with errors that name what cannot be pickled.
"""
