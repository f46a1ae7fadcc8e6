"""A2: ``device_put`` on 8 virtual CPU devices, Spelt and Grain side by side.

Run alone with ``.venv/bin/python bench/bench_device_put.py [-k PATTERN] [--reps N]``, or from
``bench/bench.py`` (``make bench``). It re-runs itself in a subprocess with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` and ``JAX_PLATFORMS=cpu``.

A training loop reads ``STEPS`` batches from ``MapDataset.source(uint8 images).batch(128)
.map(to float32 / 255).to_iter_dataset()`` (6 MiB of float32 per batch) and, per batch, runs
a jitted step on it, sharded over the 8 devices by ``NamedSharding(mesh,
PartitionSpec("data"))``, blocks on the result, then sleeps ``DEVICE_STEP_S``. The sleep
stands for an accelerator's step: the host is free meanwhile, as when a GPU or TPU computes
(on CPU devices a longer jitted step would compete with the pipeline threads for the same
cores instead). The consumer's time per step is measured for:

* ``on device``: the batches were made and placed on the devices before the clock started;
  the floor;
* ``inline``: the pipeline and ``jax.device_put(batch, sharding)`` in the loop, nothing
  overlapped;
* ``spelt``: ``spelt.experimental.device_put(ds, sharding)``;
* ``grain``: ``grain.experimental.device_put(ds, sharding)``.

Repetitions alternate the variants after one warm-up each; reported are medians, spreads and
ratios to ``on device``. Goal (issue 11, A2): spelt <= 1.1x on device, which shows that the
pipeline and the copies overlap the consumer's steps.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import time

import numpy as np

STEPS = 40
BATCH = 128
IMAGE = (64, 64, 3)
DEVICE_STEP_S = 0.02
REPS = 7
GOAL = 1.1
XLA_FLAGS = "--xla_force_host_platform_device_count=8"


def _images():
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (STEPS * BATCH, *IMAGE), dtype=np.uint8)


def _to_float(batch):
    return batch.astype(np.float32) / 255.0


def _measure(variants, reps):
    times = {name: [] for name in variants}
    for name, run in variants.items():
        run()  # warm-up: compiles the step, starts the pools
    for _ in range(reps):
        for name, run in variants.items():
            times[name].append(run())
    return times


def _child(reps: int) -> None:
    logging.getLogger("absl").setLevel(logging.ERROR)
    import grain  # pylint: disable=import-outside-toplevel
    import jax  # pylint: disable=import-outside-toplevel
    import jax.numpy as jnp  # pylint: disable=import-outside-toplevel

    import spelt  # pylint: disable=import-outside-toplevel

    assert len(jax.devices()) == 8, jax.devices()
    mesh = jax.sharding.Mesh(np.array(jax.devices()), axis_names=("data",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    images = _images()

    @jax.jit
    def step(batch):
        return jnp.mean(batch, axis=(1, 2, 3))

    def pipeline(g):
        return g.MapDataset.source(images).batch(BATCH).map(_to_float).to_iter_dataset()

    def loop(batches):
        start = time.perf_counter()
        for batch in batches:
            step(batch).block_until_ready()
            time.sleep(DEVICE_STEP_S)
        return (time.perf_counter() - start) / STEPS

    def on_device():
        placed = [jax.device_put(b, sharding) for b in pipeline(spelt)]
        jax.block_until_ready(placed)
        return loop(placed)

    def inline():
        return loop(jax.device_put(b, sharding) for b in pipeline(spelt))

    def prefetched(g):
        return lambda: loop(g.experimental.device_put(pipeline(g), sharding))

    variants = {
        "on device": on_device,
        "inline": inline,
        "spelt": prefetched(spelt),
        "grain": prefetched(grain),
    }
    times = _measure(variants, reps)
    floor = statistics.median(times["on device"])
    print(
        f"\nA2 device_put: {STEPS} steps of {BATCH} x {IMAGE} float32 "
        f"({BATCH * np.prod(IMAGE) * 4 / 2**20:.0f} MiB per batch), 8 CPU devices, "
        f"{DEVICE_STEP_S * 1e3:.0f} ms device step, {reps} reps; consumer ms per step"
    )
    print(f"{'variant':<10} {'median ms':>10} {'min-max ms':>16} {'vs on device':>13}")
    for name, ts in times.items():
        med = statistics.median(ts)
        ratio = f"{med / floor:.2f}x"
        print(
            f"{name:<10} {med * 1e3:>10.2f} {min(ts) * 1e3:>7.2f}-{max(ts) * 1e3:<8.2f} {ratio:>13}"
        )
    ratio = statistics.median(times["spelt"]) / floor
    versus = statistics.median(times["spelt"]) / statistics.median(times["grain"])
    verdict = "met" if ratio <= GOAL else "NOT met"
    print(
        f"goal spelt <= {GOAL:g}x on device: {verdict} ({ratio:.2f}x; spelt / grain {versus:.2f}x)"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only if 'A2 device_put' contains this")
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.reps)
        return
    if args.k not in "A2 device_put":  # the -k filter of bench.py
        return
    env = {**os.environ, "XLA_FLAGS": XLA_FLAGS, "JAX_PLATFORMS": "cpu"}
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        "-k",
        args.k,
        "--reps",
        str(args.reps),
    ]
    subprocess.run(cmd, env=env, check=True)


if __name__ == "__main__":
    main()
