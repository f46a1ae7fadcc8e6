"""Leaves come out with numpy's canonical dtypes, as in Grain, on every path.

Arrays that the engine makes (batches, native sources) become numpy arrays whose dtype is the
one numpy itself uses for that size: Python ints and int64 give ``dtype.char == 'l'`` and
``dtype.type is np.int64`` on Linux x86_64 (not ``np.longlong``, char 'q', which prints the
same ``dtype.name`` but a different ``repr``). Each pipeline is run with Grain 0.2.18 and Spelt
and every leaf is compared by dtype char, dtype type and repr (Grain's worker paths return
``SharedMemoryArray``, an ndarray subclass whose repr names it; Spelt returns plain ndarrays, so
the repr is compared with ``np.asarray`` of Grain's leaf).
"""

import grain
import numpy as np
import pytest

from pipelines import both, timeout  # noqa: F401  (timeout: autouse fixture)

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64]


def record(i):
  """Python scalars, and an array and a numpy scalar of every dtype (workers import it)."""
  i = int(i)
  out = {"int": i, "float": i / 2, "bool": i % 2 == 0}
  for t in DTYPES:
    out["array_" + np.dtype(t).name] = (np.arange(3) + i).astype(t)
    out["scalar_" + np.dtype(t).name] = t(i)
  return out


def _records(g):
  return g.MapDataset.range(8).map(record)


def _loader(g, worker_count):
  # Equal records: Grain's batches with workers hold other records than Spelt's (each Grain
  # worker batches its own round-robin slice; see docs/compatibility.md).
  return g.DataLoader(
      data_source=[record(3)] * 8,
      sampler=g.samplers.SequentialSampler(8, g.sharding.NoSharding()),
      operations=[g.transforms.Batch(4)],
      worker_count=worker_count,
  )


# name -> build(g): an iterable of the pipeline's elements with library g.
PATHS = {
    "MapDataset.batch": lambda g: list(_records(g).batch(4)),
    "0 workers": lambda g: _records(g).batch(4).to_iter_dataset(),
    "IterDataset.batch": lambda g: _records(g).to_iter_dataset().batch(4),
    "threads": lambda g: g.MapDataset.range(8).batch(4).to_iter_dataset(
        g.ReadOptions(num_threads=4)),
    "threads, MapDataset index": lambda g: [g.MapDataset.range(8).batch(4)[1]],
    "mp_prefetch native": lambda g: g.MapDataset.range(8).batch(4).to_iter_dataset().mp_prefetch(
        g.MultiprocessingOptions(num_workers=2)),
    "mp_prefetch": lambda g: _records(g).batch(4).to_iter_dataset().mp_prefetch(
        g.MultiprocessingOptions(num_workers=2)),
    "DataLoader 0 workers": lambda g: _loader(g, 0),
    "DataLoader 2 workers": lambda g: _loader(g, 2),
}


def _leaves(element):
  if isinstance(element, dict):
    return sorted(element.items())
  return [("", element)]


@pytest.mark.parametrize("path", list(PATHS))
def test_dtypes_match_grain_and_numpy(path):
  grain_out, spelt_out = (list(it) for it in both(PATHS[path]))
  assert len(spelt_out) == len(grain_out) > 0
  for grain_element, spelt_element in zip(grain_out, spelt_out):
    grain_leaves, spelt_leaves = _leaves(grain_element), _leaves(spelt_element)
    assert [k for k, _ in spelt_leaves] == [k for k, _ in grain_leaves]
    for (key, g), (_, s) in zip(grain_leaves, spelt_leaves):
      assert isinstance(s, np.ndarray), key
      canonical = np.dtype(s.dtype.name)
      assert (s.dtype.char, s.dtype.type) == (canonical.char, canonical.type), key
      # Grain's worker paths return its SharedMemoryArray subclass; Spelt returns ndarrays.
      g = np.asarray(g)
      assert (s.dtype.char, s.dtype.type, repr(s)) == (g.dtype.char, g.dtype.type, repr(g)), key


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_of_numpy_scalars_has_numpys_own_dtype(dtype):
  """np.int64 scalars batch to dtype.type np.int64 (not np.longlong), and so on."""
  import spelt  # pylint: disable=import-outside-toplevel

  batch = spelt.MapDataset.source([dtype(1), dtype(0)]).batch(2)[0]
  assert batch.dtype.type is np.dtype(dtype).type
  assert batch.dtype.char == np.dtype(dtype).char
  assert batch.dtype == np.dtype(dtype)
