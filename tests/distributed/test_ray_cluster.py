"""Ray actors on a two-node cluster (ray.cluster_utils.Cluster, one CPU per node): actors spread
over both nodes give the output of a local run, and losing a node mid-run loses nothing.

Run by `make test-ray`.
"""

from __future__ import annotations

import cloudpickle
import pytest

import spelt

ray = pytest.importorskip("ray", reason="Ray is optional: `make test-ray` installs it")

import ray_pipelines as rp  # noqa: E402  (after the skip: it is only for these tests)

cloudpickle.register_pickle_by_value(rp)  # actors do not have tests/ on their sys.path
RayOptions = spelt.experimental.RayOptions


@pytest.fixture(scope="module")
def two_nodes():
    """(cluster, its second node): a head and a worker node of one CPU each."""
    from ray import cluster_utils  # pylint: disable=import-outside-toplevel

    cluster = cluster_utils.Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    try:
        worker = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="spelt", log_to_driver=False)
        yield cluster, worker
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_actors_on_two_nodes_give_the_local_output(two_nodes):
    expected = rp.read(iter(rp.dataset()))
    options = RayOptions(num_actors=2, actor_name="nodes")  # one CPU each: one per node
    try:
        actual = rp.read(iter(rp.dataset(options)))
        nodes = {node for node, _ in rp.actor_locations(options)}
    finally:
        spelt.ray.stop_actors("nodes", 2)
    assert len(nodes) == 2
    rp.assert_same(actual[0], expected[0])
    assert actual[1] == expected[1]


def test_a_node_lost_mid_run_loses_nothing(two_nodes):
    cluster, worker = two_nodes
    expected = rp.read(iter(rp.dataset(length=900, transform=rp.slow)))
    options = RayOptions(num_actors=2, actor_name="lost")
    try:
        it = iter(rp.dataset(options, length=900, transform=rp.slow))
        head = rp.read(it, 12)
        before = rp.actor_locations(options)
        assert {node for node, _ in before} == {cluster.head_node.node_id, worker.node_id}
        cluster.remove_node(worker)  # its actor's chunks in flight are lost
        tail = rp.read(it)
    finally:
        spelt.ray.stop_actors("lost", 2)
    rp.assert_same(head[0] + tail[0], expected[0])
    assert head[1] + tail[1] == expected[1]
