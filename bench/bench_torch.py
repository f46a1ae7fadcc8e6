"""Tensors per second handed to a CPU training loop: spelt.torch against torch.utils.data.

``python bench/bench_torch.py [--repeats 5] [--workers 0 2]``. One in-memory source (numpy
arrays: 3x32x32 float32 images and int64 labels), read in a shuffled order in batches of 64,
each batch handed to the same loop (one tiny step that reads every value). Three cases:

- ``python-map``: a Python transform per record (normalise the image), as most pipelines have:
  ``spelt.DataLoader(operations=[Normalize(), Batch(64)], worker_count=W)`` through
  ``spelt.torch.IterableDataset`` against ``torch.utils.data.DataLoader(batch_size=64,
  shuffle=True, num_workers=W)`` over a ``Dataset`` whose ``__getitem__`` normalises.
- ``source-map``: the same transform inside the source's ``__getitem__``, the one source both
  libraries read: ``spelt.DataLoader(operations=[Batch(64)])`` against the same torch loader.
- ``gather``: no transform, each library's idiom for in-memory arrays: Spelt shuffles and
  batches record indices and gathers a batch with one numpy call (``.mp_prefetch`` with W
  workers), torch reads records one by one (``__getitem__``) and collates them.

With 0 workers every loader does all the work on the one thread of the loop, so the bound is
``ceiling``: the same batches made by a plain Python loop (the case's work and nothing else:
the transform per record and ``np.stack``, or one gather per batch), printed with each loader's
ratio to it.

Times are from the first batch to the last (worker start-up excluded, reported apart); the
loaders alternate within each repeat, and the median of the repeats is printed with the min
and max. With 0 workers the records per CPU second of the process are printed too (all the
work is in it, so other jobs on the cores do not change them). Imports nothing from other bench modules.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import torch.utils.data

import spelt
import spelt.torch

RECORDS = 20_000
BATCH = 64
_rng = np.random.default_rng(0)
IMAGES = _rng.random((RECORDS, 3, 32, 32), dtype=np.float32)
LABELS = _rng.integers(0, 10, RECORDS).astype(np.int64)
MEAN, STD = np.float32(0.5), np.float32(0.29)


class Records:
    """The in-memory source both libraries read (random access by record index)."""

    def __init__(self, normalize: bool):
        self._normalize = normalize

    def __len__(self):
        return RECORDS

    def __getitem__(self, i):
        image = IMAGES[i]
        if self._normalize:
            image = (image - MEAN) / STD
        return {"image": image, "label": LABELS[i]}


class Normalize(spelt.transforms.Map):
    def map(self, element):
        return {"image": (element["image"] - MEAN) / STD, "label": element["label"]}


def spelt_loader(case: str, workers: int):
    if case != "gather":
        in_source = case == "source-map"
        data = spelt.DataLoader(
            data_source=Records(normalize=in_source),
            sampler=spelt.samplers.IndexSampler(RECORDS, shuffle=True, seed=0, num_epochs=1),
            operations=[spelt.transforms.Batch(BATCH)]
            if in_source
            else [Normalize(), spelt.transforms.Batch(BATCH)],
            worker_count=workers,
        )
    else:  # a shuffled batch of indices, gathered from the arrays in one numpy call
        ds = spelt.MapDataset.range(RECORDS).seed(0).shuffle().batch(BATCH)
        data = ds.map(lambda idx: {"image": IMAGES[idx], "label": LABELS[idx]}).to_iter_dataset()
        if workers:
            data = data.mp_prefetch(spelt.MultiprocessingOptions(num_workers=workers))
    return spelt.torch.IterableDataset(data)


def torch_loader(case: str, workers: int):
    return torch.utils.data.DataLoader(
        Records(normalize=case != "gather"),
        batch_size=BATCH,
        shuffle=True,
        num_workers=workers,
        generator=torch.Generator().manual_seed(0),
    )


def ceiling_loader(case: str, workers: int):
    """The case's work alone, in a plain loop on this thread (the bound with 0 workers)."""
    assert workers == 0
    order = np.random.default_rng(0).permutation(RECORDS)
    source, normalize = Records(normalize=case == "source-map"), Normalize()
    for begin in range(0, RECORDS, BATCH):
        idx = order[begin : begin + BATCH]
        if case == "gather":
            image, label = IMAGES[idx], LABELS[idx]
        else:
            if case == "python-map":
                records = [normalize.map(source[i]) for i in idx]
            else:
                records = [source[i] for i in idx]
            image = np.stack([r["image"] for r in records])
            label = np.stack([r["label"] for r in records])
        yield {"image": torch.from_numpy(image), "label": torch.from_numpy(label)}


def train(loader) -> tuple[float, float, float, int]:
    """(start-up s, s from the first batch to the last, this process's CPU s over the same
    span (every thread; worker processes not counted), records) of one pass."""
    start = time.perf_counter()
    checksum = torch.zeros(())
    records = 0
    first = first_cpu = None
    for batch in loader:
        if first is None:
            first, first_cpu = time.perf_counter(), time.process_time()
        image, label = batch["image"], batch["label"]
        checksum += image.mean() + label.sum()  # the step: reads every value
        records += image.shape[0]
    end, end_cpu = time.perf_counter(), time.process_time()
    assert records == RECORDS, records
    return first - start, end - first, end_cpu - first_cpu, records


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"records={RECORDS} batch={BATCH} image=3x32x32 float32, repeats={args.repeats}")
    for case in ("python-map", "source-map", "gather"):
        for workers in args.workers:
            rates = {}
            loaders = [("spelt.torch", spelt_loader), ("torch", torch_loader)]
            if workers == 0:
                loaders.append(("ceiling", ceiling_loader))
            runs = {name: [] for name, _ in loaders}
            for _ in range(args.repeats):  # alternating, so that load changes hit all alike
                for name, make in loaders:
                    runs[name].append(train(make(case, workers)))
            cpu_rates = {}
            for name, _ in loaders:
                per_s = sorted(n / t for _, t, _, n in runs[name])
                startup = statistics.median(s for s, _, _, _ in runs[name])
                rates[name] = statistics.median(per_s)
                cpu_rates[name] = statistics.median(n / c for _, _, c, n in runs[name])
                print(
                    f"{case:10s} workers={workers} {name:12s} "
                    f"{rates[name]:10.0f} records/s ({rates[name] / BATCH:7.1f} batches/s; "
                    f"min {per_s[0]:.0f}, max {per_s[-1]:.0f}; start-up {startup * 1e3:.0f} ms)"
                )
            print(
                f"{case:10s} workers={workers} ratio {rates['spelt.torch'] / rates['torch']:.2f}x"
            )
            if workers == 0:
                print(
                    f"{case:10s} workers=0 spelt.torch / ceiling "
                    f"{rates['spelt.torch'] / rates['ceiling']:.2f}, torch / ceiling "
                    f"{rates['torch'] / rates['ceiling']:.2f}"
                )
                # All the work is in this process with 0 workers: records per CPU second are
                # what other jobs on the cores leave unchanged.
                print(
                    f"{case:10s} workers=0 per CPU s: spelt.torch {cpu_rates['spelt.torch']:.0f},"
                    f" torch {cpu_rates['torch']:.0f}, ceiling {cpu_rates['ceiling']:.0f}; "
                    f"spelt.torch / torch {cpu_rates['spelt.torch'] / cpu_rates['torch']:.2f}x,"
                    f" / ceiling {cpu_rates['spelt.torch'] / cpu_rates['ceiling']:.2f}"
                )


if __name__ == "__main__":
    main()
