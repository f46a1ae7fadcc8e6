"""pick_performance_config / PerformanceConfig against PyPI Grain 0.2.18: same choices for the
same pipelines, budgets and limits."""

import grain
import numpy as np
import pytest

from pipelines import timeout  # noqa: F401  (autouse fixture)
import spelt


def _pipeline(g, kind):
    if kind == "arrays":  # 40 KiB per element, 1 MiB per batch
        return (
            g.MapDataset.range(200)
            .map(lambda i: {"x": np.full((10, 1024), i, np.float32)})
            .to_iter_dataset()
            .batch(25)
        )
    if kind == "mixed":
        return g.MapDataset.range(50).map(lambda i: (b"x" * 100, [i, 2.0])).to_iter_dataset()
    if kind == "two-stages":
        a = g.MapDataset.range(10).map(lambda i: np.zeros(4096, np.uint8)).to_iter_dataset()
        b = g.MapDataset.range(10).map(lambda i: np.zeros(1024, np.uint8)).to_iter_dataset()
        return g.IterDataset.mix([a, b])
    return g.MapDataset.range(3).to_iter_dataset()  # "short": fewer elements than samples


def _pick(g, kind, **kwargs):
    config = g.experimental.pick_performance_config(_pipeline(g, kind), **kwargs)
    return (
        config.multiprocessing_options.num_workers,
        config.read_options.prefetch_buffer_size,
        config.read_options.num_threads,
    )


@pytest.mark.parametrize("kind", ["arrays", "mixed", "two-stages", "short"])
@pytest.mark.parametrize(
    "budget,max_workers,max_buffer",
    [(1024, 8, 500), (3, None, None), (1, 64, 10_000), (100, 2, 3)],
)
def test_same_choice_as_grain(kind, budget, max_workers, max_buffer):
    kwargs = dict(ram_budget_mb=budget, max_workers=max_workers, max_buffer_size=max_buffer)
    assert _pick(spelt, kind, **kwargs) == _pick(grain, kind, **kwargs)
    kwargs["samples_to_check"] = 2
    assert _pick(spelt, kind, **kwargs) == _pick(grain, kind, **kwargs)


def test_performance_config_fields():
    config = spelt.experimental.PerformanceConfig()
    assert config.multiprocessing_options is None and config.read_options is None
    with pytest.raises(AttributeError):
        config.other = 1  # slots, as Grain's
    chosen = spelt.experimental.pick_performance_config(
        _pipeline(spelt, "arrays"), ram_budget_mb=4, max_workers=16, max_buffer_size=None
    )
    assert chosen.multiprocessing_options.num_workers == 4  # 4 MiB / 1 MiB batches
    assert chosen.read_options.prefetch_buffer_size == 102  # 4 MiB / 40 KiB elements
    ds = _pipeline(spelt, "arrays").mp_prefetch(chosen.multiprocessing_options)
    assert len(list(ds)) == 8
