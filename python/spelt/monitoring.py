"""``spelt.monitoring``: the metric hooks of Grain 0.2.18 (grain/_src/core/monitoring.py and
monitoring_base.py): ``Counter``, ``Metric`` (gauge), ``EventMetric`` (distribution),
``Metadata``, ``Units``, ``Bucketer``, ``get_monitoring_root``, ``setup_telemetry`` and the
``record_*`` helpers, with the same constructors and methods.

Grain exports its metrics to Prometheus when ``prometheus_client`` is installed and otherwise
drops them (``Get`` returns 0.0). Spelt keeps them in memory instead, per label values, so
``Get(*labels)`` returns what was recorded: a counter's total, a gauge's last value, an event
metric's count of records. Thread-safe: each metric has a lock. Spelt itself records nothing
here yet; its per-stage figures are in the execution summary (docs/observability.md).
"""

from __future__ import annotations

import enum
import threading
from typing import Any

__all__ = [
    "Bucketer",
    "Counter",
    "EventMetric",
    "Metadata",
    "Metric",
    "Units",
    "get_monitoring_root",
    "record_autotune_node_throughput",
    "record_autotune_optimization_latency",
    "record_autotune_parameter",
    "record_autotune_usl_coeff",
    "record_bytes_read_and_latency",
    "record_framework_type",
    "set_debug_server_ports",
    "setup_telemetry",
]


@enum.unique
class Units(enum.Enum):
    """Metric units (Grain's)."""

    SECONDS = enum.auto()
    MILLISECONDS = enum.auto()
    MICROSECONDS = enum.auto()
    NANOSECONDS = enum.auto()
    BITS = enum.auto()
    BYTES = enum.auto()


class Metadata:
    """A metric's description and any other keyword attributes (e.g. ``units=``)."""

    def __init__(self, description: str = "", **kwargs: Any):
        self.description = description
        for key, value in kwargs.items():
            setattr(self, key, value)
        self._kwargs = kwargs


class Bucketer:
    """A distribution's bucketing (kept for Grain code; Spelt records counts only)."""

    def __init__(self, *args: Any, bucketer_type: str | None = None, **kwargs: Any):
        self.args = args
        self.kwargs = kwargs
        self.type = bucketer_type

    @staticmethod
    def PowersOf(base: float) -> Bucketer:  # noqa: N802  (Grain's name)
        return Bucketer(base, bucketer_type="PowersOf")


class _InMemory:
    """Values per tuple of label values. ``name``, ``metadata`` and ``fields`` (a list of
    (label name, type) pairs) as Grain's constructors take them, positionally or by keyword."""

    def __init__(self, name: str, metadata: Any = None, *args: Any, **kwargs: Any):
        self.name = name
        self.metadata = kwargs.pop("metadata", None) if metadata is None else metadata
        fields = kwargs.pop("fields", None)
        for arg in args:
            if fields is None and isinstance(arg, (list, tuple)):
                fields = arg
        self.fields = list(fields or [])
        self._values: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def _key(self, args: tuple, kwargs: dict) -> tuple:
        return (*args, *(kwargs[n] for n, _ in self.fields if n in kwargs))

    def Get(self, *args: Any, **kwargs: Any) -> float | int:  # noqa: N802
        with self._lock:
            return self._values.get(self._key(args, kwargs), 0)

    def ClearAll(self) -> None:  # noqa: N802
        with self._lock:
            self._values.clear()


class Counter(_InMemory):
    """A monotonic count per label values."""

    def Increment(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        self.IncrementBy(1, *args, **kwargs)

    def IncrementBy(self, value: float | int, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        key = self._key(args, kwargs)
        with self._lock:
            self._values[key] = self._values.get(key, 0) + value


class Metric(_InMemory):
    """A gauge: the last value set per label values."""

    def __init__(self, name: str, value_type: type = float, metadata: Any = None, *args, **kwargs):
        super().__init__(name, metadata, *args, **kwargs)
        self.value_type = value_type

    def Set(self, value: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        with self._lock:
            self._values[self._key(args, kwargs)] = value


class EventMetric(_InMemory):
    """A distribution; ``Get`` returns the number of values recorded, ``values`` them all."""

    def __init__(self, name: str, metadata: Any = None, *args: Any, **kwargs: Any):
        self.bucketer = kwargs.pop("bucketer", None)
        kwargs.pop("buckets", None)
        super().__init__(name, metadata, *args, **kwargs)
        self._records: dict[tuple, list] = {}

    def Record(self, value: float | int, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        key = self._key(args, kwargs)
        with self._lock:
            self._records.setdefault(key, []).append(value)
            self._values[key] = len(self._records[key])

    def values(self, *args: Any, **kwargs: Any) -> list:
        """The values recorded for these label values, in order."""
        with self._lock:
            return list(self._records.get(self._key(args, kwargs), []))

    def ClearAll(self) -> None:  # noqa: N802
        with self._lock:
            self._values.clear()
            self._records.clear()


def get_monitoring_root() -> None:
    """None: there is no monitoring root outside Google (as Grain's open-source build)."""
    return None


def setup_telemetry() -> None:
    """Grain starts its Prometheus exporter here; Spelt keeps metrics in memory: no-op."""


_bytes_read = Counter("/grain/python/data_sources/bytes_read", fields=[("source", str)])
_read_time_ns = EventMetric("/grain/python/dataset/source_read_time_ns", fields=[("source", str)])
_framework_type = Counter("/grain/framework_type", fields=[("name", str)])
_debug_server_ports = Metric("/grain/debug_server_ports", str)
_autotune_throughput = Metric("/grain/autotune/node_throughput", fields=[("node", str)])
_autotune_parameters = Metric(
    "/grain/autotune/parameters", fields=[("node", str), ("parameter", str)]
)
_autotune_usl = Metric("/grain/autotune/usl_coeffs", fields=[("node", str), ("coeff", str)])
_autotune_latency = EventMetric("/grain/autotune/optimization_latency_ms")


def record_bytes_read_and_latency(
    source: str, *, num_bytes: int, latency_ns: int, num_reads: int
) -> None:
    """Adds ``num_bytes`` to the bytes read from ``source`` and records the mean latency of
    its ``num_reads`` reads."""
    _bytes_read.IncrementBy(num_bytes, source)
    _read_time_ns.Record(latency_ns / max(num_reads, 1), source)


def record_autotune_node_throughput(node_name: str, throughput: float) -> None:
    _autotune_throughput.Set(throughput, node_name)


def record_autotune_parameter(node_name: str, name: str, value: float) -> None:
    _autotune_parameters.Set(value, node_name, name)


def record_autotune_usl_coeff(node_name: str, name: str, value: float) -> None:
    _autotune_usl.Set(value, node_name, name)


def record_autotune_optimization_latency(latency_ms: float) -> None:
    _autotune_latency.Record(latency_ms)


def record_framework_type(framework_type: str) -> None:
    _framework_type.Increment(framework_type)


def set_debug_server_ports(ports: list[int]) -> None:
    """Records the debug server ports (first the main process's); ignores an empty list."""
    if ports:
        _debug_server_ports.Set(",".join(map(str, ports)))
