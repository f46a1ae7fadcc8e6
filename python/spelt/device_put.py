"""``spelt.experimental.device_put``: batches moved to JAX devices ahead of the consumer.

Grain 0.2.18's design (grain/_src/python/experimental/device_put/device_put.py): a thread
reads ``cpu_buffer_size`` elements ahead on the host, a second thread calls
``jax.device_put`` on them and keeps ``device_buffer_size`` of them on the devices, so the
host-to-device copies of the next batches run while the consumer computes on this one.
jax is imported on the first call only (``pip install spelt-ml[jax]``).
"""

from __future__ import annotations

from typing import Any

from spelt import dataset
from spelt.transformations.thread_prefetch import ThreadPrefetchIterDataset


class _DevicePut:
    """``jax.device_put(element, device)``: a picklable callable for ``IterDataset.map``."""

    def __init__(self, device: Any):
        self._device = device

    def __call__(self, element: Any) -> Any:
        import jax  # pylint: disable=import-outside-toplevel

        return jax.device_put(element, self._device)


def device_put(
    ds: dataset.IterDataset,
    device: Any,
    *,
    cpu_buffer_size: int = 4,
    device_buffer_size: int = 2,
) -> dataset.IterDataset:
    """``ds`` with each element (any pytree of arrays) placed by ``jax.device_put(element,
    device)`` in a background thread, with read-ahead on the host and on the devices.

    Args:
        ds: the IterDataset to read (e.g. batches from ``to_iter_dataset()``).
        device: what ``jax.device_put`` accepts: a ``jax.Device``, or a
            ``jax.sharding.Sharding`` (e.g. ``NamedSharding(mesh, PartitionSpec("data"))``
            splits axis 0 of every leaf over the mesh; that axis must then divide evenly).
        cpu_buffer_size: elements read ahead on the host (>= 0).
        device_buffer_size: elements already on the devices, ahead of the consumer (>= 0).

    Returns:
        An IterDataset of pytrees of ``jax.Array``. Its iterator state is ``ds``'s state
        after the element last returned, so it restores exactly.

    Raises:
        ImportError: if jax is not installed. ValueError: a negative buffer size.
        Errors of ``jax.device_put`` (e.g. a batch not divisible over the sharding) are
        raised by the ``next`` that reaches the element.
    """
    import jax  # pylint: disable=import-outside-toplevel,unused-import  # fail early, as Grain

    ds = ThreadPrefetchIterDataset(ds, prefetch_buffer_size=cpu_buffer_size)
    ds = ds.map(_DevicePut(device))
    return ThreadPrefetchIterDataset(ds, prefetch_buffer_size=device_buffer_size)
