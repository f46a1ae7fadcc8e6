"""spelt.experimental.RayOptions without a Ray cluster: validation, where it is accepted, and that
building a Ray stage imports no Ray (Ray is optional). The Ray runs are in tests/distributed."""

from __future__ import annotations

import subprocess
import sys

import pytest

import spelt
from spelt.experimental import RayOptions


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_actors": 0}, "num_actors must be >= 1"),
        ({"per_actor_buffer_size": 0}, "per_actor_buffer_size must be >= 1"),
        ({"timeout_s": 0}, "timeout_s must be > 0"),
        ({"max_chunk_retries": -1}, "must be >= 0"),
        ({"num_cpus_per_actor": -1}, "must be >= 0"),
    ],
)
def test_bad_options_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RayOptions(**kwargs)


def test_mp_prefetch_puts_a_ray_stage_under_the_stream_part():
    options = RayOptions(num_actors=3)
    ds = spelt.MapDataset.range(10).map(abs).to_iter_dataset().batch(2).mp_prefetch(options)
    stage = ds.parents[0]
    assert isinstance(stage, spelt.ray.RayPrefetchIterDataset)
    assert str(stage) == f"RayPrefetchIterDataset({options})"


def test_loader_refuses_worker_count_with_a_worker_backend():
    with pytest.raises(ValueError, match="pass worker_count=0 with it, not 2"):
        spelt.DataLoader(
            data_source=list(range(10)),
            sampler=spelt.samplers.SequentialSampler(10, spelt.sharding.NoSharding()),
            worker_count=2,
            worker_backend=RayOptions(),
        )


def test_building_a_ray_stage_imports_no_ray():
    code = (
        "import sys, spelt\n"
        "ds = spelt.MapDataset.range(4).map(abs).to_iter_dataset()\n"
        "ds = ds.mp_prefetch(spelt.experimental.RayOptions())\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
