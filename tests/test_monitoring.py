"""spelt.monitoring: Grain 0.2.18's metric hooks (names and signatures of
grain/_src/core/monitoring.py), kept in memory."""

import threading

import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt
from spelt import monitoring


def test_counter_metric_event_metric_keep_values_per_labels():
    counter = monitoring.Counter(
        "/test/calls", monitoring.Metadata(description="calls"), fields=[("op", str)]
    )
    counter.Increment("map")
    counter.IncrementBy(4, "map")
    counter.Increment("batch")
    assert (counter.Get("map"), counter.Get("batch"), counter.Get("other")) == (5, 1, 0)
    assert counter.metadata.description == "calls"
    gauge = monitoring.Metric("/test/gauge", int, metadata=monitoring.Metadata(units="x"))
    gauge.Set(3)
    gauge.Set(7)
    assert gauge.Get() == 7 and gauge.metadata.units == "x"
    events = monitoring.EventMetric(
        "/test/latency",
        monitoring.Metadata(units=monitoring.Units.MILLISECONDS),
        bucketer=monitoring.Bucketer.PowersOf(2.0),
    )
    for v in (1.0, 2.5, 4.0):
        events.Record(v)
    assert events.Get() == 3 and events.values() == [1.0, 2.5, 4.0]
    assert events.bucketer.type == "PowersOf" and events.bucketer.args == (2.0,)
    for metric in (counter, gauge, events):
        metric.ClearAll()
    assert counter.Get("map") == gauge.Get() == events.Get() == 0


def test_counter_is_thread_safe():
    counter = monitoring.Counter("/test/threads")

    def add():
        for _ in range(10_000):
            counter.Increment()

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.Get() == 40_000


def test_module_functions():
    assert spelt.monitoring is monitoring
    assert monitoring.get_monitoring_root() is None
    assert monitoring.setup_telemetry() is None
    monitoring.record_bytes_read_and_latency("src", num_bytes=100, latency_ns=50, num_reads=2)
    monitoring.record_bytes_read_and_latency("src", num_bytes=20, latency_ns=10, num_reads=1)
    assert monitoring._bytes_read.Get("src") == 120
    assert monitoring._read_time_ns.values("src") == [25.0, 10.0]
    monitoring.record_framework_type("jax")
    assert monitoring._framework_type.Get("jax") >= 1
    monitoring.set_debug_server_ports([])
    monitoring.set_debug_server_ports([8000, 8001])
    assert monitoring._debug_server_ports.Get() == "8000,8001"
    monitoring.record_autotune_node_throughput("map", 10.0)
    monitoring.record_autotune_parameter("map", "buffer", 4)
    monitoring.record_autotune_usl_coeff("map", "alpha", 0.1)
    monitoring.record_autotune_optimization_latency(1.5)
    assert monitoring._autotune_parameters.Get("map", "buffer") == 4
    with pytest.raises(AttributeError):
        monitoring.Units.GIGABYTES
